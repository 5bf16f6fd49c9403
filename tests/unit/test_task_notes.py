"""TaskRun's notes (core/engine/task_notes.py): a queued task's new place in its context's
queue and a message steered into a running turn change the stored task without moving its
A2A state, each legal only where run_state.NOTE_LEGAL says."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

import anyio
import pytest
from pydantic import JsonValue

from core.backend import ApprovalRequest, Turn
from core.engine.policy import NO_HOOKS
from core.engine.run_state import NOTE_LEGAL, IllegalTransitionError, RunState
from core.engine.task_run import TaskRun
from core.engine.wrapper_section import WRAPPER_METADATA_KEY, WrapperSection
from core.storage.memory import InMemoryTaskStore
from core.wire.enums import TaskState
from core.wire.models import Message, Part, StreamResponse, Task, TaskStatus

S = TaskState
STEERED = "Steered: the message was delivered into the running turn."


def _user(message_id: str, text: str = "hi") -> Message:
    return Message(message_id=message_id, role="ROLE_USER", parts=[Part(text=text)])


async def _queued(store: InMemoryTaskStore) -> TaskRun:
    run = TaskRun("p", Task(id="t", context_id="c", status=TaskStatus(state=S.SUBMITTED)), store)
    await run.admit(_user("m"))
    run.announce()
    return run


async def _running(store: InMemoryTaskStore) -> TaskRun:
    run = await _queued(store)
    turn = Turn(
        principal="p", context_id="c", task_id="t", message_id="m", session_id=None, parts=()
    )
    run.begin(anyio.CancelScope(), NO_HOOKS, turn)
    return run


async def _events(run: TaskRun, note: Coroutine[Any, Any, None]) -> list[StreamResponse]:
    """The events the run publishes while `note` runs."""
    subscription = run.subscribe(snapshot=False)
    await note
    run.end_streams()
    async with subscription:
        return [e async for e in subscription]


def _state(run: TaskRun) -> TaskState:
    # Read afresh (mypy would narrow `run.task.status.state` across the awaits otherwise).
    return run.task.status.state


def test_the_legal_table_of_notes() -> None:
    assert {
        "requeue": (frozenset({RunState.QUEUED}), frozenset({S.SUBMITTED})),
        "steer": (frozenset({RunState.RUNNING}), frozenset({S.WORKING})),
    } == NOTE_LEGAL


async def test_a_queued_task_s_new_place_is_stored_and_told_in_its_unchanged_state() -> None:
    store = InMemoryTaskStore()
    run = await _queued(store)
    place: dict[str, JsonValue] = {"position": 1, "ahead": ["a"]}

    events = await _events(run, run.requeue(place))

    stored = await store.get("p", "t")
    assert stored is not None
    assert (WrapperSection.of(stored) or WrapperSection()).queue == place
    assert (run.state, stored.status.state) == (RunState.QUEUED, S.SUBMITTED)
    [event] = events
    assert event.status_update is not None
    assert event.status_update.status.state is S.SUBMITTED
    assert event.status_update.metadata == {WRAPPER_METADATA_KEY: {"queue": place}}
    # The same place again is no note at all.
    assert await _events(run, run.requeue(place)) == []


async def test_only_a_queued_submitted_task_has_a_place_to_move_to() -> None:
    store = InMemoryTaskStore()
    run = await _running(store)
    before = run.task

    with pytest.raises(IllegalTransitionError):
        await run.requeue(None)
    assert run.task is before


async def test_a_steered_message_joins_the_history_and_the_task_stays_working() -> None:
    store = InMemoryTaskStore()
    run = await _running(store)
    await run.work()

    events = await _events(run, run.steered(_user("s", "use the other table"), STEERED))

    stored = await store.get("p", "t")
    assert stored is not None
    assert [m.message_id for m in stored.history or []] == ["m", "s"]
    assert (run.state, run.task.status.state, stored.status.state) == (
        RunState.RUNNING,
        S.WORKING,
        S.WORKING,
    )
    [event] = events
    assert event.status_update is not None
    status = event.status_update.status
    assert status.state is S.WORKING
    assert status.message is not None
    assert status.message.metadata == {WRAPPER_METADATA_KEY: {"steered": "s"}}


async def test_a_turn_whose_agent_said_nothing_yet_starts_working_when_steered() -> None:
    store = InMemoryTaskStore()
    run = await _running(store)
    assert run.task.status.state is S.SUBMITTED

    events = await _events(run, run.steered(_user("s"), STEERED))

    assert [e.status_update.status.state for e in events if e.status_update] == [
        S.WORKING,
        S.WORKING,
    ]
    assert _state(run) is S.WORKING


async def test_only_a_running_turn_can_be_steered() -> None:
    store = InMemoryTaskStore()
    queued = await _queued(store)
    with pytest.raises(IllegalTransitionError):
        await queued.steered(_user("s"), STEERED)
    assert [m.message_id for m in queued.task.history or []] == ["m"]

    paused = await _running(InMemoryTaskStore())
    await paused.work()
    approval = ApprovalRequest(request_id="r", kind="command", tool="sh", summary="Run make?")
    await paused.pause(approval, [Part(text="Run make?")])
    with pytest.raises(IllegalTransitionError):
        await paused.steered(_user("s"), STEERED)

    idle = TaskRun.stored(
        "p", Task(id="t", context_id="c", status=TaskStatus(state=S.WORKING)), store, None
    )
    with pytest.raises(IllegalTransitionError):
        await idle.steered(_user("s"), STEERED)
    assert idle.task.history is None


async def test_a_turn_whose_task_left_working_cannot_be_steered_any_more() -> None:
    run = await _running(InMemoryTaskStore())
    await run.work()
    await run.ask(None)  # the turn ends on a question; the run is still RUNNING until finish

    with pytest.raises(IllegalTransitionError):
        await run.steered(_user("s"), STEERED)
    assert (run.state, _state(run)) == (RunState.RUNNING, S.INPUT_REQUIRED)
    assert [m.message_id for m in run.task.history or []] == ["m"]
