"""The states of a task run and of its task, and which transition may leave which
(task_run.py): the run's five states (`LEGAL`, by transition), the A2A task states the
run's named outcomes move its task through (`TASK_LEGAL`, by state), and the notes that change
a task without moving it (`NOTE_LEGAL`)."""

from __future__ import annotations

import enum

from core.wire.enums import TaskState


class RunState(enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPING = "stopping"
    DONE = "done"


_IN_FLIGHT = frozenset({RunState.QUEUED, RunState.RUNNING, RunState.PAUSED, RunState.STOPPING})
LEGAL: dict[str, frozenset[RunState]] = {
    "admit": frozenset({RunState.DONE}),
    "begin": frozenset({RunState.QUEUED}),
    "pause": frozenset({RunState.RUNNING}),
    "resume": frozenset({RunState.PAUSED}),
    "stop": _IN_FLIGHT,
    "finish": _IN_FLIGHT,
}

_ENDS = frozenset({TaskState.COMPLETED, TaskState.FAILED, TaskState.REJECTED, TaskState.CANCELED})
_ASKS = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})
TASK_LEGAL: dict[TaskState, frozenset[TaskState]] = {
    # Admitted: the agent starts (work), or the turn ends before it does (a refusal, a
    # failure, a cancel while queued), or the agent's first word ends it.
    TaskState.SUBMITTED: frozenset({TaskState.WORKING, *_ENDS, *_ASKS}),
    TaskState.WORKING: frozenset({*_ENDS, *_ASKS}),
    # Waiting for the caller: an answer (a new turn, or a paused turn resumed), a cancel, or
    # a failure (a stop, a crash) ends the wait.
    TaskState.INPUT_REQUIRED: frozenset(
        {TaskState.SUBMITTED, TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED}
    ),
    TaskState.AUTH_REQUIRED: frozenset(
        {TaskState.SUBMITTED, TaskState.WORKING, TaskState.CANCELED, TaskState.FAILED}
    ),
    # Terminal: the task never changes again.
    **dict.fromkeys(_ENDS, frozenset()),
}


# Notes: what changes a task (stored) without moving its A2A state, legal only in these run
# states and task states (task_notes.py). A queued task's place in its context's queue moves
# as the turns ahead of it end; a steered message joins a running turn of a WORKING task.
NOTE_LEGAL: dict[str, tuple[frozenset[RunState], frozenset[TaskState]]] = {
    "requeue": (frozenset({RunState.QUEUED}), frozenset({TaskState.SUBMITTED})),
    "steer": (frozenset({RunState.RUNNING}), frozenset({TaskState.WORKING})),
}


class IllegalTransitionError(RuntimeError):
    """A transition was asked of a run in a state that does not allow it (an engine bug)."""


def task_move_legal(was: TaskState, to: TaskState) -> bool:
    return to in TASK_LEGAL.get(was, frozenset())


def check_task_move(task_id: str, was: TaskState, to: TaskState) -> None:
    if not task_move_legal(was, to):
        raise IllegalTransitionError(f"task {task_id} cannot move from {was.value} to {to.value}")
