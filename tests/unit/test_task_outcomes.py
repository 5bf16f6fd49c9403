"""The task's A2A state changes only through TaskRun's named outcomes, each checked against
the legal table (run_state.TASK_LEGAL); the user's policy hooks run before a transition,
never inside it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Literal

import anyio
import pytest

from core.backend import ApprovalRequest, BackendEvent, Turn
from core.engine.policy import Hooks
from core.engine.run_state import TASK_LEGAL, IllegalTransitionError, RunState
from core.engine.task_run import TaskRun
from core.engine.turn.content import agent_message
from core.storage.memory import InMemoryTaskStore
from core.wire.enums import TaskState
from core.wire.models import Message, Part, StreamResponse, Task, TaskStatus

ROOT = Path(__file__).resolve().parents[2]
S = TaskState


def test_the_legal_table_of_task_states() -> None:
    ends = {S.COMPLETED, S.FAILED, S.REJECTED, S.CANCELED}
    asks = {S.INPUT_REQUIRED, S.AUTH_REQUIRED}
    waiting = {S.SUBMITTED, S.WORKING, S.CANCELED, S.FAILED}

    assert {
        S.SUBMITTED: {S.WORKING, *ends, *asks},
        S.WORKING: ends | asks,
        S.INPUT_REQUIRED: waiting,
        S.AUTH_REQUIRED: waiting,
        S.COMPLETED: set(),
        S.FAILED: set(),
        S.REJECTED: set(),
        S.CANCELED: set(),
    } == TASK_LEGAL


def test_nothing_but_task_run_sets_a_task_status() -> None:
    # `set_status` is private: the engine names the outcome (complete, fail, ask, ...).
    assert not hasattr(TaskRun, "set_status")
    calls = []
    for path in sorted((ROOT / "core").rglob("*.py")):
        file = path.relative_to(ROOT).as_posix()
        if file == "core/engine/task_run.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr == "_set_status":
                calls.append(f"{file}:{node.lineno}")
    assert not calls


def _task(state: TaskState) -> Task:
    return Task(id="t", context_id="c", status=TaskStatus(state=state))


def _says(text: str) -> Message:
    return agent_message(_task(S.WORKING), [Part(text=text)])


async def test_an_illegal_outcome_raises_and_changes_nothing() -> None:
    store = InMemoryTaskStore()
    done = _task(S.COMPLETED)
    await store.save("p", done)
    run = TaskRun.stored("p", done, store, None)
    subscription = run.subscribe(snapshot=False)

    for outcome in (run.work(), run.fail(_says("no")), run.ask(None), run.cancel()):
        with pytest.raises(IllegalTransitionError):
            await outcome

    assert run.task is done
    assert await store.get("p", "t") == done
    run.end_streams()
    async with subscription:
        assert [e async for e in subscription] == []


async def test_a_follow_up_of_a_running_task_is_illegal() -> None:
    store = InMemoryTaskStore()
    working = _task(S.WORKING)
    run = TaskRun.stored("p", working, store, None)

    with pytest.raises(IllegalTransitionError):
        await run.admit(Message(message_id="m", role="ROLE_USER", parts=[Part(text="hi")]))
    assert run.state is RunState.DONE


async def test_each_named_outcome_moves_the_task_to_its_state() -> None:
    for name, state in [
        ("complete", S.COMPLETED),
        ("fail", S.FAILED),
        ("reject", S.REJECTED),
        ("ask", S.INPUT_REQUIRED),
        ("ask_auth", S.AUTH_REQUIRED),
        ("cancel", S.CANCELED),
    ]:
        store = InMemoryTaskStore()
        run = TaskRun("p", _task(S.SUBMITTED), store)
        await run.work()
        await getattr(run, name)(_says(name))
        stored = await store.get("p", "t")
        assert stored is not None
        assert (run.task.status.state, stored.status.state) == (state, state), name


class _Watching:
    """Policy hooks that record what the run and the store hold while they run."""

    def __init__(self, run: list[TaskRun], store: InMemoryTaskStore) -> None:
        self.run = run
        self.store = store
        self.seen: list[tuple[str, TaskState, RunState, TaskState | None]] = []
        self.rewrite: TaskState | None = None

    async def _look(self, hook: str) -> None:
        run = self.run[0]
        stored = await self.store.get("p", "t")
        self.seen.append(
            (hook, run.task.status.state, run.state, stored.status.state if stored else None)
        )

    async def after_event(
        self, turn: Turn, event: BackendEvent | None, out: StreamResponse
    ) -> StreamResponse | Literal["drop"] | None:
        await self._look("afterEvent")
        return None

    async def after_turn(self, turn: Turn, status: TaskStatus) -> TaskStatus | None:
        await self._look("afterTurn")
        if self.rewrite is None:
            return None
        return status.model_copy(update={"state": self.rewrite})


async def _running(store: InMemoryTaskStore, hooks: Hooks) -> TaskRun:
    run = TaskRun("p", _task(S.SUBMITTED), store)
    await run.admit(Message(message_id="m", role="ROLE_USER", parts=[Part(text="hi")]))
    turn = Turn(
        principal="p", context_id="c", task_id="t", message_id="m", session_id=None, parts=()
    )
    run.begin(anyio.CancelScope(), hooks, turn)
    return run


async def test_policy_hooks_run_before_the_transition_never_inside_it() -> None:
    store = InMemoryTaskStore()
    holder: list[TaskRun] = []
    watching = _Watching(holder, store)
    hooks = Hooks(after_event=watching.after_event, after_turn=watching.after_turn)
    run = await _running(store, hooks)
    holder.append(run)

    await run.work()
    assert watching.seen == [("afterEvent", S.SUBMITTED, RunState.RUNNING, S.SUBMITTED)]
    watching.seen.clear()
    approval = ApprovalRequest(request_id="r", kind="command", tool="sh", summary="Run make?")
    await run.pause(approval, [Part(text="Run make?")])
    assert watching.seen == [
        ("afterTurn", S.WORKING, RunState.RUNNING, S.WORKING),
        ("afterEvent", S.WORKING, RunState.RUNNING, S.WORKING),
    ]
    assert (run.state, run.task.status.state) == (RunState.PAUSED, S.INPUT_REQUIRED)
    await run.resume(Message(message_id="a", role="ROLE_USER", parts=[Part(text="yes")]))
    watching.seen.clear()
    await run.complete(_says("done"))

    # Each hook saw the task (and the stored copy) still in the state it was leaving, and a
    # pausing run still RUNNING: the transition begins once the hooks are done.
    assert watching.seen == [
        ("afterTurn", S.WORKING, RunState.RUNNING, S.WORKING),
        ("afterEvent", S.WORKING, RunState.RUNNING, S.WORKING),
    ]
    assert run.task.status.state is S.COMPLETED


async def test_a_hook_may_rewrite_a_final_state_only_as_the_table_allows() -> None:
    store = InMemoryTaskStore()
    holder: list[TaskRun] = []
    watching = _Watching(holder, store)
    hooks = Hooks(after_turn=watching.after_turn)
    run = await _running(store, hooks)
    holder.append(run)
    await run.work()
    await run.ask(_says("which one?"))
    assert run.task.status.state is S.INPUT_REQUIRED

    # Waiting for the caller, a task may be canceled but not completed: the rewrite is
    # refused and the cancel stands.
    watching.rewrite = S.COMPLETED
    await run.cancel()

    stored = await store.get("p", "t")
    assert stored is not None
    assert (run.task.status.state, stored.status.state) == (S.CANCELED, S.CANCELED)

    # From WORKING the same kind of rewrite is legal, and applies.
    other = InMemoryTaskStore()
    watching.store, watching.rewrite = other, S.FAILED
    run = await _running(other, hooks)
    holder[0] = run
    await run.work()
    await run.complete(_says("done"))
    assert run.task.status.state is S.FAILED
