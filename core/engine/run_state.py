"""The five states of a task run and which transition may leave which (task_run.py)."""

from __future__ import annotations

import enum


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


class IllegalTransitionError(RuntimeError):
    """A transition was asked of a run in a state that does not allow it (an engine bug)."""
