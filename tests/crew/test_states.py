"""The crew's states: enums with legal-transition tables, owned by the ledger; no state is
spelled as a string literal anywhere else in the crew."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from examples.crew.ledger.ledger import Ledger
from examples.crew.ledger.states import (
    Activity,
    IllegalTransitionError,
    JobState,
    RunState,
    StepState,
    check_run,
    check_step,
)

CREW = Path(__file__).resolve().parents[2] / "examples" / "crew"
STATE_VALUES = {s.value for enum in (JobState, StepState, RunState, Activity) for s in enum}
# Modules whose words are not the crew's states: the demo's mock-model adapter reads pytest's
# summary ("1 failed") and starts mock servers by their `running()` method.
OTHER_VOCABULARY = {"states.py", "mock_models.py"}


def state_literals(source: str, file: str) -> list[str]:
    """Every string constant in `source` that spells a state (docstrings are prose)."""
    found = []
    for node in ast.walk(ast.parse(source, filename=file)):
        if isinstance(node, ast.Constant) and node.value in STATE_VALUES:
            found.append(f"{file}:{node.lineno}: {node.value!r}")
    return found


def test_no_state_string_literal_outside_the_enums() -> None:
    found = [
        hit
        for path in sorted(CREW.rglob("*.py"))
        if path.name not in OTHER_VOCABULARY
        for hit in state_literals(path.read_text(encoding="utf-8"), path.name)
    ]

    assert len(list(CREW.rglob("*.py"))) > 10  # the walk sees the crew
    assert not found, "use the enums of examples/crew/ledger/states.py:\n  " + "\n  ".join(found)


def test_the_literal_scan_finds_a_state() -> None:
    assert state_literals('if x == "done":\n    pass\n', "x.py") == ["x.py:1: 'done'"]
    assert state_literals('"""Done: the step is done."""\n', "x.py") == []


def test_the_tables_allow_the_crews_moves_and_refuse_the_rest() -> None:
    check_step(StepState.PENDING, StepState.RUNNING, "s")
    check_step(StepState.RUNNING, StepState.DONE, "s")
    check_step(StepState.FAILED, StepState.PENDING, "s")  # a re-run takes it up again
    check_run(RunState.SENDING, RunState.WORKING, "r")
    check_run(RunState.COMPLETED, RunState.DONE, "r")
    for old, new in [
        (StepState.DONE, StepState.RUNNING),
        (StepState.PENDING, StepState.DONE),
        (StepState.SKIPPED, StepState.DONE),
    ]:
        with pytest.raises(IllegalTransitionError):
            check_step(old, new, "s")
    with pytest.raises(IllegalTransitionError, match="done -> working"):
        check_run(RunState.DONE, RunState.WORKING, "r")
    with pytest.raises(IllegalTransitionError):
        check_run(RunState.COMPLETED, RunState.WORKING, "r")


async def test_the_ledger_refuses_an_illegal_change_and_keeps_the_state(ledger: Ledger) -> None:
    await ledger.create_job("j", "crew", "digest", "input", "ctx")
    await ledger.set_step("j", "one", agent="a", state=StepState.RUNNING)
    await ledger.set_step("j", "one", agent="a", state=StepState.DONE)
    with pytest.raises(IllegalTransitionError):
        await ledger.set_step("j", "one", agent="a", state=StepState.FAILED)
    assert (await ledger.steps("j"))["one"].state is StepState.DONE

    run = await ledger.new_run("j", "one", round_=1, agent="a", context_id="ctx")
    assert run.state is RunState.SENDING
    run = await ledger.update_run(run, state=RunState.DONE)
    with pytest.raises(IllegalTransitionError):
        await ledger.update_run(run, state=RunState.LOST)
    assert (await ledger.run("j", "one", 1)).state is RunState.DONE


async def test_the_ledger_tells_its_listeners_every_step_change(ledger: Ledger) -> None:
    heard: list[tuple[str, StepState, str | None]] = []
    stop = ledger.listen("j", lambda _job, step, state, detail: heard.append((step, state, detail)))
    await ledger.set_step("j", "one", agent="a", state=StepState.RUNNING)
    await ledger.set_step("j", "one", agent="a", state=StepState.FAILED, detail="why")
    stop()
    await ledger.set_step("j", "one", agent="a", state=StepState.PENDING)
    assert heard == [("one", StepState.RUNNING, None), ("one", StepState.FAILED, "why")]


async def test_a_ledger_from_a_newer_crew_is_refused(tmp_path: Path) -> None:
    from examples.crew.ledger.schema import LATEST, LedgerTooNewError  # noqa: PLC0415

    async with Ledger.opened(tmp_path / "l.sqlite3") as ledger:
        await ledger.create_job("j", "crew", "d", "i", "c")
    import sqlite3  # noqa: PLC0415 - a newer crew's migration, written behind its back

    with sqlite3.connect(tmp_path / "l.sqlite3") as db:
        db.execute("INSERT INTO schema_migrations VALUES (?, 'later', 'now')", (LATEST + 1,))
    db.close()
    with pytest.raises(LedgerTooNewError):
        async with Ledger.opened(tmp_path / "l.sqlite3"):
            pass


async def test_a_file_that_is_not_a_crew_ledger_is_refused_and_left_as_it_was(
    tmp_path: Path,
) -> None:
    import sqlite3  # noqa: PLC0415 - another program's database, made by hand

    from examples.crew.ledger.ledger import LedgerError  # noqa: PLC0415

    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY)")
    db.close()
    with pytest.raises(LedgerError, match="another program's database"):
        async with Ledger.opened(other):
            pass
    with sqlite3.connect(other) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    db.close()
    assert tables == ["invoices"]  # nothing written to it

    text = tmp_path / "notes.txt"
    text.write_text("not a database, but long enough to have a header of sorts\n" * 20)
    with pytest.raises(LedgerError, match="not an SQLite database"):
        async with Ledger.opened(text):
            pass
