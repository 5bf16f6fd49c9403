"""Steering: a message with `delivery: "steer"` goes into its task's running turn (the backend's
`Steerable.steer`) instead of waiting for the next one; the task's history records it and a
WORKING status update says it was steered. Whatever cannot be steered is refused with
UnsupportedOperation naming `delivery: "queue"`, before anything is stored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import structlog

from core.backend import Backend, Turn, new_error_id, with_error_id
from core.backend.control import Capabilities, Steerable, SteerRefusedError
from core.engine.queries import LiveRuns, TaskQueries
from core.engine.run_state import IllegalTransitionError, RunState
from core.engine.task_run import TaskRun
from core.engine.turn.content import part_to_content
from core.engine.turn.guard import backend_call
from core.wire.enums import TaskState
from core.wire.errors import InvalidParamsError, UnsupportedOperationError
from core.wire.models import Message

log = structlog.get_logger(__name__)

QUEUE_INSTEAD = (
    'send it with delivery: "queue" to run it as the next turn of the conversation instead'
)
CANNOT_STEER = f"This agent cannot take a message into a running turn; {QUEUE_INSTEAD}."
STEERED_NOTE = "Steered: the message was delivered into the running turn."


def _not_running(task_id: str, state: str) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        f"Task {task_id} has no running turn to steer (it is {state}); {QUEUE_INSTEAD}."
    )


_STEERABLE = frozenset({TaskState.SUBMITTED, TaskState.WORKING})


def _running(run: TaskRun) -> Turn | None:
    """The run's turn while it runs (not queued, paused or stopping, nor ending: its task not
    past WORKING; run_state.NOTE_LEGAL), with its bound session and its workspace: what
    `steer` is given."""
    turn = run.turn
    if run.state is not RunState.RUNNING or turn is None:
        return None
    if run.task.status.state not in _STEERABLE:
        return None
    return replace(turn, session_id=run.session_id or turn.session_id)


class Steering:
    def __init__(
        self,
        backend: Backend,
        live: LiveRuns,
        queries: TaskQueries,
        capabilities: Callable[[], Capabilities],
    ) -> None:
        self._backend = backend
        self._live = live
        self._queries = queries
        self._capabilities = capabilities

    async def target(self, principal: str, message: Message) -> TaskRun:
        """The run whose turn `message` steers (refused when there is none it can steer)."""
        if not message.task_id:
            raise InvalidParamsError(
                "delivery steer needs the taskId of a working task",
                violations=[("message.taskId", "the id of a working task")],
            )
        task = await self._queries.load(principal, message.task_id)
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                f"Context {message.context_id} does not match context {task.context_id}"
                f" of task {task.id}",
                violations=[("message.contextId", "does not match the task's context")],
            )
        if not self._capabilities().steer or not isinstance(self._backend, Steerable):
            raise UnsupportedOperationError(CANNOT_STEER)
        run = self._live.get(principal, task.id)
        if run is None or _running(run) is None:
            state = task.status.state.value.removeprefix("TASK_STATE_").lower()
            raise _not_running(task.id, state.replace("_", "-"))
        return run

    async def deliver(self, run: TaskRun, message: Message) -> None:
        """Hand `message` to the agent's running turn, then record it in the task."""
        turn = _running(run)
        if turn is None:
            raise _not_running(run.task.id, "ending")
        await self._steer(turn, message)
        if _running(run) is None:
            # The turn ended while the agent took it: nothing can show it was steered.
            raise _not_running(run.task.id, "ending")
        # The message joins the stored history; a WORKING update says it was steered (the
        # task's state is not moved: a note, run_state.NOTE_LEGAL).
        user = message.model_copy(update={"context_id": run.task.context_id})
        try:
            await run.steered(user, STEERED_NOTE)
        except IllegalTransitionError:
            # The turn ended while the agent took it (its task left WORKING meanwhile).
            raise _not_running(run.task.id, "ending") from None

    async def _steer(self, turn: Turn, message: Message) -> None:
        backend = self._backend
        if not isinstance(backend, Steerable):  # target() checked it
            raise UnsupportedOperationError(CANNOT_STEER)
        parts = tuple(part_to_content(p) for p in message.parts)
        try:
            with backend_call("steer"):
                await backend.steer(turn, parts)
        except SteerRefusedError as exc:
            error_id = new_error_id()
            log.info("turn.steer_refused", error_id=error_id, task_id=turn.task_id, reason=str(exc))
            raise UnsupportedOperationError(
                f"The running turn did not take the message; {QUEUE_INSTEAD}."
            ) from None
        except Exception:
            error_id = new_error_id()
            log.exception("turn.steer_failed", error_id=error_id, task_id=turn.task_id)
            sentence = (
                f"The agent failed to take the message into its running turn; {QUEUE_INSTEAD}"
            )
            raise UnsupportedOperationError(with_error_id(sentence, error_id)) from None
