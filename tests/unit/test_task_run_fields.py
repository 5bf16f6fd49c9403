"""`TaskRun` is the one state machine: nothing outside core/engine/task_run.py assigns its
fields, and its state changes only through legal transitions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from core.engine.run_state import LEGAL, IllegalTransitionError, RunState
from core.engine.task_run import TaskRun
from core.storage.memory import InMemoryTaskStore
from core.wire.enums import TaskState
from core.wire.models import Message, Part, Task, TaskStatus

ROOT = Path(__file__).resolve().parents[2]
HOME = "core/engine/task_run.py"
FIELDS = frozenset(TaskRun.__slots__)


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, ast.Assign):
        return list(node.targets)
    if isinstance(node, ast.AugAssign | ast.AnnAssign):
        return [node.target]
    if isinstance(node, ast.Delete):
        return list(node.targets)
    return []


def _flatten(target: ast.expr) -> list[ast.expr]:
    if isinstance(target, ast.Tuple | ast.List):
        return [t for e in target.elts for t in _flatten(e)]
    return [target]


def field_writes(source: str, file: str) -> list[str]:
    """Every write of a TaskRun field (its slots) on anything but `self`, and every
    `setattr(x, "<field>", ...)`, in `source`."""
    found = []
    for node in ast.walk(ast.parse(source, filename=file)):
        for target in (t for raw in _targets(node) for t in _flatten(raw)):
            if (
                isinstance(target, ast.Attribute)
                and target.attr in FIELDS
                and not (isinstance(target.value, ast.Name) and target.value.id == "self")
            ):
                found.append(f"{file}:{target.lineno} writes .{target.attr}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"setattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in FIELDS
        ):
            found.append(f"{file}:{node.lineno} {node.func.id}s {node.args[1].value}")
    return found


def subclasses_task_run(source: str) -> bool:
    return any(
        isinstance(node, ast.ClassDef)
        and any(isinstance(b, ast.Name) and b.id == "TaskRun" for b in node.bases)
        for node in ast.walk(ast.parse(source))
    )


def core_sources() -> list[tuple[str, str]]:
    return [
        (p.relative_to(ROOT).as_posix(), p.read_text(encoding="utf-8"))
        for p in sorted((ROOT / "core").rglob("*.py"))
    ]


def test_nothing_outside_task_run_assigns_its_fields() -> None:
    sources = core_sources()
    assert any(file == HOME for file, _ in sources)

    writes = [w for file, src in sources if file != HOME for w in field_writes(src, file)]
    subclasses = [file for file, src in sources if file != HOME and subclasses_task_run(src)]

    assert not writes, "TaskRun fields written outside task_run.py:\n  " + "\n  ".join(writes)
    assert not subclasses


def test_its_public_attributes_are_read_only() -> None:
    # Slots, no __dict__, private slot names: `run.anything = x` raises, so the only way to
    # write a field is `run._name = x`, which the walk above finds.
    assert all(name.startswith("_") for name in FIELDS)
    run = TaskRun("p", _task(), InMemoryTaskStore())
    with pytest.raises(AttributeError):
        run.state = RunState.RUNNING  # type: ignore[misc] # the point: it is read-only
    with pytest.raises(AttributeError):
        run.extra = 1  # type: ignore[attr-defined] # the point: there is no such field


def test_the_walk_finds_writes_and_ignores_a_class_s_own_fields() -> None:
    source = "\n".join(
        [
            "run._state = x",
            "run._task, other = a, b",
            "del run._reply",
            "setattr(run, '_scope', None)",
            "self._state = x",
            "lease.session_id = x",
        ]
    )

    assert field_writes(source, "core/x.py") == [
        "core/x.py:1 writes ._state",
        "core/x.py:2 writes ._task",
        "core/x.py:3 writes ._reply",
        "core/x.py:4 setattrs _scope",
    ]


def state_of(run: TaskRun) -> RunState:
    # Read afresh each time (mypy would narrow `run.state` across the awaits otherwise).
    return run.state


def _task() -> Task:
    return Task(id="t", context_id="c", status=TaskStatus(state=TaskState.SUBMITTED))


def _user() -> Message:
    return Message(message_id="m", role="ROLE_USER", parts=[Part(text="hi")])


async def test_transitions_are_checked_persisted_and_published() -> None:
    store = InMemoryTaskStore()
    run = TaskRun("p", _task(), store)
    assert state_of(run) is RunState.DONE
    with pytest.raises(IllegalTransitionError):
        await run.stop(None)
    with pytest.raises(IllegalTransitionError):
        run.finish()

    await run.admit(_user())

    assert state_of(run) is RunState.QUEUED
    stored = await store.get("p", "t")
    assert stored is not None
    assert stored.status.state is TaskState.SUBMITTED
    assert [m.message_id for m in stored.history or []] == ["m"]
    with pytest.raises(IllegalTransitionError):
        await run.admit(_user())

    subscription = run.subscribe(snapshot=False)
    await run.stop(None)  # queued: the task ends now, stored then published

    assert state_of(run) is RunState.STOPPING
    stored = await store.get("p", "t")
    assert stored is not None
    assert stored.status.state is TaskState.CANCELED
    run.finish()
    assert state_of(run) is RunState.DONE
    async with subscription:
        events = [e async for e in subscription]
    assert [e.status_update.status.state for e in events if e.status_update] == [TaskState.CANCELED]


def test_the_transition_table_names_every_state() -> None:
    reachable = {s for allowed in LEGAL.values() for s in allowed}
    assert reachable == set(RunState)
