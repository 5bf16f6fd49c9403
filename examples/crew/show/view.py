"""The live view on the terminal, and the person's side of `input-required`.

On a terminal: a table redrawn in place (step, agent, state, round/attempt, elapsed, tokens,
task, last note). Elsewhere (CI, a pipe): one `key=value` line per change, easy to read in a
log and to grep. Both write to stderr, so stdout carries only the report.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TextIO

import anyio

from examples.crew.ledger.states import Activity, RunState, StepState
from examples.crew.show.events import Question, StepStatus

_COLORS: dict[StepState | RunState | Activity, str] = {
    StepState.DONE: "32",
    StepState.FAILED: "31",
    StepState.CANCELED: "31",
    RunState.TIMEOUT: "31",
    StepState.SKIPPED: "90",
    StepState.NEEDS_INPUT: "33",
    RunState.INPUT_REQUIRED: "33",
    RunState.AUTH_REQUIRED: "33",
    Activity.RETRYING: "33",
}
# Shown states whose every new note is worth a line of its own.
_NOISY = frozenset(
    {
        Activity.RETRYING,
        RunState.INPUT_REQUIRED,
        RunState.AUTH_REQUIRED,
        StepState.FAILED,
        StepState.NEEDS_INPUT,
    }
)


def _elapsed(status: StepStatus, now: float) -> str:
    if status.started is None:
        return ""
    seconds = (status.ended if status.ended is not None else now) - status.started
    return f"{seconds:.1f}s" if seconds < 60 else f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


def _tokens(status: StepStatus) -> str:
    if not (status.tokens_in or status.tokens_out):
        return ""
    return f"{status.tokens_in}/{status.tokens_out}"


class LineView:
    """One line per change of state, task, round or attempt (and per retry or question)."""

    def __init__(self, out: TextIO = sys.stderr, clock: Callable[[], float] = anyio.current_time):
        self._out = out
        self._clock = clock
        self._last: dict[str, tuple[tuple[object, ...], str]] = {}

    def changed(self, status: StepStatus) -> None:
        key = (status.shown, status.task_id, status.round, status.attempt)
        last = self._last.get(status.step)
        if (
            last is not None
            and last[0] == key
            and (status.shown not in _NOISY or last[1] == status.note)
        ):
            return
        self._last[status.step] = (key, status.note)
        fields = [
            f"step={status.step}",
            f"agent={status.agent}",
            f"state={status.shown}",
            f"round={status.round}",
            f"attempt={status.attempt}",
        ]
        if status.task_id:
            fields.append(f"task={status.task_id}")
        if elapsed := _elapsed(status, self._clock()):
            fields.append(f"elapsed={elapsed}")
        if tokens := _tokens(status):
            fields.append(f"tokens={tokens}")
        if status.note:
            fields.append(f"note={' '.join(status.note.split())[:100]!r}")
        print("crew " + " ".join(fields), file=self._out, flush=True)

    def message(self, text: str) -> None:
        print(f"crew: {text}", file=self._out, flush=True)

    async def tick(self) -> None:
        """Nothing to refresh without a terminal."""


class TerminalView:
    """A table redrawn in place; `tick()` refreshes elapsed times twice a second."""

    def __init__(
        self,
        steps: list[StepStatus],
        out: TextIO = sys.stderr,
        clock: Callable[[], float] = anyio.current_time,
    ) -> None:
        self._rows = {s.step: s for s in steps}
        self._out = out
        self._clock = clock
        self._drawn = 0
        self._paused = False

    def changed(self, status: StepStatus) -> None:
        self._rows[status.step] = status
        self._draw()

    def message(self, text: str) -> None:
        self._clear()
        print(text, file=self._out, flush=True)
        self._draw()

    def pause(self) -> None:
        self._clear()
        self._paused = True

    def resume(self) -> None:
        self._paused = False
        self._draw()

    async def tick(self) -> None:
        while True:
            await anyio.sleep(0.5)
            self._draw()

    def _clear(self) -> None:
        if self._drawn:
            self._out.write(f"\x1b[{self._drawn}F\x1b[J")
            self._drawn = 0

    def _draw(self) -> None:
        if self._paused:
            return
        now = self._clock()
        header = ("step", "agent", "state", "rnd/att", "elapsed", "tokens", "task", "note")
        rows: list[tuple[str, ...]] = [header]
        shown: list[StepState | RunState | Activity | None] = [None]
        for s in self._rows.values():
            shown.append(s.shown)
            rows.append(
                (
                    s.step,
                    s.agent,
                    str(s.shown),
                    f"{s.round}/{s.attempt}" if s.attempt else "",
                    _elapsed(s, now),
                    _tokens(s),
                    (s.task_id or "")[:8],
                    " ".join(s.note.split())[:50],
                )
            )
        widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
        self._clear()
        for n, row in enumerate(rows):
            cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=False)]
            state = shown[n]
            color = _COLORS.get(state) if state is not None else "1"
            if color:
                cells[2] = f"\x1b[{color}m{cells[2]}\x1b[0m"
            self._out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")
        self._out.flush()
        self._drawn = len(rows)


class TerminalAsker:
    """Asks the person at the terminal (one question at a time); an empty line = no answer."""

    def __init__(self, view: TerminalView | None = None, out: TextIO = sys.stderr) -> None:
        self._view = view
        self._out = out

    async def ask(self, question: Question) -> str | None:
        if self._view is not None:
            self._view.pause()
        try:
            print(
                f"\n[{question.step}] agent {question.agent!r} needs {question.kind}:\n"
                f"  {question.text}\n"
                "Your answer (empty line: leave it open and stop this step): ",
                end="",
                file=self._out,
                flush=True,
            )
            line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        finally:
            if self._view is not None:
                self._view.resume()
        return line.strip() or None
