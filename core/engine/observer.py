"""What the engine tells whoever watches its turns (metrics, traces), at a few fixed points.

Each call is synchronous, made in the engine's path, and must be cheap and never raise: an
observer only counts and records. `admitted` is made in the caller's request (its context
variables: a trace context is read there); the others in the turn's own task. The default
observes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from core.backend import ToolCall, ToolResult, Turn, Usage

if TYPE_CHECKING:
    from core.engine.task_run import TaskRun


class TurnObserver(Protocol):
    def admitted(self, run: TaskRun, turn: Turn) -> None:
        """A turn is admitted and waits for its lane and slot (in the caller's request)."""

    def started(self, run: TaskRun, turn: Turn) -> None:
        """The turn has its slot and runs."""

    def first_output(self, run: TaskRun) -> None:
        """The turn's first text reached the task."""

    def tool(self, run: TaskRun, event: ToolCall | ToolResult) -> None:
        """The agent called a tool, or a tool call ended."""

    def usage(self, run: TaskRun, usage: Usage) -> None:
        """A Usage event of the turn."""

    def ended(self, run: TaskRun, *, started: bool) -> None:
        """The turn is over (`run.task` holds the state it ended in); `started`: it ran
        (False: it ended while still queued)."""


class NoObserver:
    def admitted(self, run: TaskRun, turn: Turn) -> None:
        return None

    def started(self, run: TaskRun, turn: Turn) -> None:
        return None

    def first_output(self, run: TaskRun) -> None:
        return None

    def tool(self, run: TaskRun, event: ToolCall | ToolResult) -> None:
        return None

    def usage(self, run: TaskRun, usage: Usage) -> None:
        return None

    def ended(self, run: TaskRun, *, started: bool) -> None:
        return None


class Observers:
    """Several observers as one, called in order."""

    def __init__(self, observers: list[TurnObserver]) -> None:
        self._all = tuple(observers)

    def admitted(self, run: TaskRun, turn: Turn) -> None:
        for observer in self._all:
            observer.admitted(run, turn)

    def started(self, run: TaskRun, turn: Turn) -> None:
        for observer in self._all:
            observer.started(run, turn)

    def first_output(self, run: TaskRun) -> None:
        for observer in self._all:
            observer.first_output(run)

    def tool(self, run: TaskRun, event: ToolCall | ToolResult) -> None:
        for observer in self._all:
            observer.tool(run, event)

    def usage(self, run: TaskRun, usage: Usage) -> None:
        for observer in self._all:
            observer.usage(run, usage)

    def ended(self, run: TaskRun, *, started: bool) -> None:
        for observer in self._all:
            observer.ended(run, started=started)


NO_OBSERVER: TurnObserver = NoObserver()
