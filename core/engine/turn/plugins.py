"""The one seam for what plugs into the engine's turns: a workspace per context, budgets.

The engine calls a `TurnHooks` before anything of a message is stored (`check_message`: its
content may be refused, e.g. a malformed patch, by raising a DaemonError) and at four fixed
points of each turn, and nowhere else: `prepare` before the
backend sees the turn (a workspace per context is made ready, and named in the turn it
returns; raising `StopTurnError` fails the task with its reason), `finish` as the turn ends
with an answer, a question or a failure of the agent (what the turn changed becomes
artifacts and task metadata), `release` once the turn is over whatever its outcome (the
workspace is given back), and `charge` for every Usage event of the turn (a budget is
charged; raising `StopTurnError` stops the turn). The default does nothing; `chain` runs
several in order. `Plugins` bundles it with the user's policy hooks and the turn observer:
everything the engine is given to extend it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from anyio.abc import TaskStatus

from core.backend import ArtifactOut, Turn, Usage
from core.engine.observer import NO_OBSERVER, TurnObserver
from core.engine.policy import NO_HOOKS, Hooks
from core.engine.task_run import Notify, TaskRun
from core.storage.contracts import StoredConfig
from core.wire.models import Message, StreamResponse, TaskPushNotificationConfig


class StopTurnError(Exception):
    """Raised by `charge`: the turn must stop now; its task FAILS with `reason` (written for
    the caller), like a turn past its deadline."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class TurnReport:
    """What `finish` adds to the turn's task before its end state: artifacts, and sections
    of its `a2aWrapper` metadata (e.g. `workspace`)."""

    artifacts: tuple[ArtifactOut, ...] = ()
    sections: Mapping[str, Any] | None = None


NO_REPORT = TurnReport()


class TurnHooks(Protocol):
    def check_message(self, message: Message) -> None:
        """Before anything is stored: raise (a DaemonError) to refuse the message's content."""
        ...

    async def prepare(self, turn: Turn) -> Turn:
        """Before the backend runs `turn` (inside its context's lane, after its session is
        resolved): return the turn to run. Raising fails the task with an error id."""
        ...

    async def finish(self, turn: Turn) -> TurnReport:
        """The agent ended the turn (answered, asked, or failed): what to add to the task
        before its state is set. Raising fails the task with an error id."""
        ...

    async def release(self, turn: Turn) -> None:
        """After the turn, whatever ended it (shielded from cancellation); must not raise."""
        ...

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        """A Usage event of a turn of `principal` in `context_id`, in the order reported; may
        raise StopTurnError."""
        ...


class NoTurnHooks:
    def check_message(self, message: Message) -> None:
        return None

    async def prepare(self, turn: Turn) -> Turn:
        return turn

    async def finish(self, turn: Turn) -> TurnReport:
        return NO_REPORT

    async def release(self, turn: Turn) -> None:
        return None

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        return None


NO_TURN_HOOKS: TurnHooks = NoTurnHooks()


class ChainedTurnHooks:
    """Several hooks as one: prepared in order (each gets the turn the one before returned),
    released in reverse; a prepare that raises releases the ones already prepared. Hooks key
    their state by the turn's task, so each is released with the last turn."""

    def __init__(self, hooks: Sequence[TurnHooks]) -> None:
        self._hooks = tuple(hooks)

    def check_message(self, message: Message) -> None:
        for hook in self._hooks:
            hook.check_message(message)

    async def prepare(self, turn: Turn) -> Turn:
        done: list[TurnHooks] = []
        try:
            for hook in self._hooks:
                turn = await hook.prepare(turn)
                done.append(hook)
        except BaseException:
            for hook in reversed(done):
                await hook.release(turn)
            raise
        return turn

    async def finish(self, turn: Turn) -> TurnReport:
        artifacts: list[ArtifactOut] = []
        sections: dict[str, Any] = {}
        for hook in self._hooks:
            report = await hook.finish(turn)
            artifacts.extend(report.artifacts)
            sections.update(report.sections or {})
        return TurnReport(tuple(artifacts), sections or None)

    async def release(self, turn: Turn) -> None:
        for hook in reversed(self._hooks):
            await hook.release(turn)

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        for hook in self._hooks:
            await hook.charge(principal, context_id, usage)


def chain(*hooks: TurnHooks) -> TurnHooks:
    return hooks[0] if len(hooks) == 1 else ChainedTurnHooks(hooks)


class TaskPush(Protocol):
    """Push notifications as the engine sees them (core/push/plugin.py)."""

    def notify(self, run: TaskRun, event: StreamResponse) -> None:
        """Each event a run publishes, after its subscribers; never waits."""

    async def vet(self, config: TaskPushNotificationConfig, field: str) -> None:
        """Refuse (InvalidParamsError naming `field`) an inline config of a message, before
        anything of the message is stored."""

    async def put(self, stored: StoredConfig) -> None:
        """Store the inline config of an admitted message's task."""

    async def open(self) -> None: ...

    async def serve(self, *, task_status: TaskStatus[None] = ...) -> None:
        """Deliver until cancelled (in the engine's task group)."""

    async def flush(self) -> None:
        """Return once every event notified so far has reached the outbox."""

    async def close(self) -> None: ...


class TurnBudget(Protocol):
    """What admission reserves for a turn (the budgets: core/usage/budgets.py)."""

    def reserve(self, principal: str, context_id: str, task_id: str) -> None:
        """Check and hold in one synchronous step; raise (a DaemonError) to refuse."""
        ...

    def unreserve(self, task_id: str) -> None:
        """Give back what the turn of `task_id` still holds (it never ran, or it ended)."""
        ...


class _NoBudget:
    def reserve(self, principal: str, context_id: str, task_id: str) -> None:
        return None

    def unreserve(self, task_id: str) -> None:
        return None


NO_BUDGET: TurnBudget = _NoBudget()


@dataclass(frozen=True)
class Plugins:
    """Everything that extends the engine: `turn` (workspaces, budgets: the check of a
    message before it is stored, then each turn's four points), the user's policy `hooks`
    (`hooks.*`: before a turn, on each event, after it; they run outside TaskRun's
    transitions), the `observer` of each turn (metrics, traces), the `budget` a turn
    reserves as it is admitted, who else hears each event a run publishes (`published`:
    after its subscribers, never waiting; the other replicas' watchers), and `push`
    notifications (None: push is off, and a message with a push config is refused)."""

    turn: TurnHooks = NO_TURN_HOOKS
    hooks: Hooks = NO_HOOKS
    observer: TurnObserver = NO_OBSERVER
    budget: TurnBudget = NO_BUDGET
    published: Notify | None = None
    push: TaskPush | None = None


NO_PLUGINS = Plugins()
