"""The live view: lines without a terminal, a table redrawn in place on one."""

from __future__ import annotations

import io
from dataclasses import replace

from examples.crew.ledger.states import RunState, StepState
from examples.crew.show.events import StepStatus
from examples.crew.show.view import LineView, TerminalView


def test_lines_only_when_something_changes() -> None:
    out = io.StringIO()
    view = LineView(out, clock=lambda: 12.0)
    status = StepStatus(
        "write",
        "writer",
        state=StepState.RUNNING,
        run=RunState.WORKING,
        round=1,
        attempt=1,
        task_id="t-1",
        started=10.0,
    )
    view.changed(status)
    view.changed(status)  # nothing new
    status = replace(
        status, run=RunState.INPUT_REQUIRED, note="Which\n   license?", tokens_in=12, tokens_out=3
    )
    view.changed(status)
    lines = out.getvalue().splitlines()
    assert lines == [
        "crew step=write agent=writer state=working round=1 attempt=1 task=t-1 elapsed=2.0s",
        "crew step=write agent=writer state=input-required round=1 attempt=1 task=t-1 "
        "elapsed=2.0s tokens=12/3 note='Which license?'",
    ]


def test_the_table_is_redrawn_in_place() -> None:
    out = io.StringIO()
    rows = [StepStatus("write", "writer"), StepStatus("review", "reviewer")]
    view = TerminalView(rows, out, clock=lambda: 5.0)
    view.changed(replace(rows[0], state=StepState.DONE, started=1.0, attempt=1))
    first = out.getvalue()
    assert first.count("\n") == 3  # header and two steps
    assert "\x1b[32mdone" in first
    view.changed(rows[1])
    assert out.getvalue()[len(first) :].startswith("\x1b[3F\x1b[J")  # back up, redraw
    view.pause()
    view.message("a question")
    view.resume()
    assert "a question" in out.getvalue()
