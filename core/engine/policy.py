"""Policy hooks (`hooks.*`): user code that may refuse a turn, redact or drop what goes out,
and rewrite a turn's final status.

Each hook is an async callable named `package.module:function`:

    async def before_turn(turn: Turn) -> str | None
        A reason string refuses the turn (the task becomes REJECTED with it); None allows it.
    async def after_event(turn: Turn, event: BackendEvent | None, out: StreamResponse)
            -> StreamResponse | Literal["drop"] | None
        Sees each A2A event before it is stored or sent; returns a replacement, "drop", or
        None to leave it alone. `event` is the backend event that caused it (None for events the
        daemon makes itself, like the final status). A terminal or interrupted status cannot be
        dropped.
    async def after_turn(turn: Turn, status: TaskStatus) -> TaskStatus | None
        May rewrite the final status of a turn (it must stay terminal or interrupted, and be a
        state the task may move to: run_state.TASK_LEGAL).

The hooks run before TaskRun's transition, never inside it: while they run, the task and its
stored copy are in the state it leaves.

A hook that raises, takes longer than `hooks.timeout`, or returns something unusable changes
nothing: the daemon uses the unhooked value and logs `hook.failed`, so a task always ends.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

import anyio
import structlog

from core.backend import BackendEvent, Turn
from core.engine.run_state import task_move_legal
from core.engine.task_content import status_event
from core.wire.models import StreamResponse, Task, TaskStatus

log = structlog.get_logger(__name__)

DROP = "drop"

BeforeTurn = Callable[[Turn], Awaitable[str | None]]
AfterEvent = Callable[
    [Turn, BackendEvent | None, StreamResponse], Awaitable[StreamResponse | Literal["drop"] | None]
]
AfterTurn = Callable[[Turn, TaskStatus], Awaitable[TaskStatus | None]]


class HookLoadError(LookupError):
    pass


def load_hook(reference: str) -> Callable[..., Awaitable[Any]]:
    """Import `package.module:function` and check it is an async callable."""
    module_name, _, attr = reference.partition(":")
    if not module_name or not attr:
        raise HookLoadError(f"hook {reference!r} is not of the form package.module:function")
    try:
        hook = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise HookLoadError(f"cannot load hook {reference!r}: {exc}") from exc
    if not inspect.iscoroutinefunction(hook):
        raise HookLoadError(f"hook {reference!r} must be an async function")
    return hook  # type: ignore[no-any-return]


@dataclass(frozen=True)
class Hooks:
    before_turn: BeforeTurn | None = None
    after_event: AfterEvent | None = None
    after_turn: AfterTurn | None = None
    timeout: float = 5.0

    async def _call(self, name: str, hook: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """The hook's result, or None when it failed or timed out (logged)."""
        try:
            with anyio.move_on_after(self.timeout) as scope:
                return await hook(*args)
        except Exception:
            log.exception("hook.failed", hook=name)
            return None
        if scope.cancelled_caught:
            log.warning("hook.failed", hook=name, reason="timeout", timeout=self.timeout)
        return None

    async def refusal(self, turn: Turn) -> str | None:
        if self.before_turn is None:
            return None
        reason = await self._call("beforeTurn", self.before_turn, turn)
        if reason is not None and not isinstance(reason, str):
            log.warning("hook.failed", hook="beforeTurn", reason="not a string")
            return None
        return reason or None

    async def outgoing(
        self, turn: Turn, event: BackendEvent | None, out: StreamResponse
    ) -> StreamResponse | None:
        """The event to store and send instead of `out`, or None to drop it."""
        if self.after_event is None:
            return out
        # Wire models are frozen: the hook cannot change `out` in place, only return another.
        result = await self._call("afterEvent", self.after_event, turn, event, out)
        if result == DROP:
            if _final(out):
                log.warning(
                    "hook.failed", hook="afterEvent", reason="a final status is never dropped"
                )
                return out
            return None
        if (
            isinstance(result, StreamResponse)
            and _same_kind(out, result)
            and _final(result) == _final(out)
        ):
            return result
        if result is not None:
            log.warning(
                "hook.failed", hook="afterEvent", reason="not a StreamResponse of that kind"
            )
        return out

    async def status_update(
        self, turn: Turn, cause: BackendEvent | None, task: Task, status: TaskStatus
    ) -> StreamResponse | None:
        """The update moving `task` to `status` as afterTurn (a final status) and afterEvent
        leave it (None: dropped). TaskRun calls this before its transition; a rewrite to a
        state the task cannot move to (run_state.TASK_LEGAL) changes nothing."""
        hooked = status
        if status.state.terminal or status.state.interrupted:
            hooked = await self.final_status(turn, status)
        event = await self.outgoing(turn, cause, status_event(task, hooked))
        if event is None or event.status_update is None:
            return None
        to = event.status_update.status.state
        if to is not status.state and not task_move_legal(task.status.state, to):
            log.warning("hook.failed", reason=f"the task cannot move to {to.value}", task=task.id)
            return status_event(task, status)
        return event

    async def final_status(self, turn: Turn, status: TaskStatus) -> TaskStatus:
        if self.after_turn is None:
            return status
        result = await self._call("afterTurn", self.after_turn, turn, status)
        if isinstance(result, TaskStatus) and (result.state.terminal or result.state.interrupted):
            return result
        if result is not None:
            log.warning("hook.failed", hook="afterTurn", reason="not a final TaskStatus")
        return status


def _final(out: StreamResponse) -> bool:
    update = out.status_update
    return update is not None and (update.status.state.terminal or update.status.state.interrupted)


def _same_kind(a: StreamResponse, b: StreamResponse) -> bool:
    return (a.status_update is None) == (b.status_update is None) and (
        a.artifact_update is None
    ) == (b.artifact_update is None)


NO_HOOKS = Hooks()
