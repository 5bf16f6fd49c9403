"""Conversation control on the real codex binary against the mock model: steer a running turn
(`turn/steer`), fork a thread (`thread/fork`), and a model, an effort or a mode for one turn
only (each turn states the configured ones again: Codex would keep them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Failed,
    Mode,
    TextContent,
    Turn,
    TurnOptions,
    Usage,
)
from core.backend.control import SteerRefusedError
from harness.codex import MODEL
from harness.mock_models.openai_responses import RecordedRequest, Reply, ResponsesMock
from harness.mock_models.steps import Shell, WriteFile
from tests.backends.codex.conftest import MakeBackend
from tests.backends.codex.support import run, session_of, turn
from wrappers.codex.backend import CodexBackend

STEER = "Use the other table, not this one."


class Seen:
    """A tap counting the app-server's notifications by method."""

    def __init__(self) -> None:
        self.methods: Counter[str] = Counter()

    def __call__(self, _: str, message: dict[str, Any]) -> None:
        method = message.get("method")
        if isinstance(method, str):
            self.methods[method] += 1


Step = Callable[[], Awaitable[None]]


async def while_held(
    backend: CodexBackend, mock: ResponsesMock, running: Turn, meanwhile: Step
) -> list[BackendEvent]:
    """The events of `running`, whose next model request is held until `meanwhile` is done."""
    mock.script(Reply.hold())
    events: list[BackendEvent] = []

    async def consume() -> None:
        async for event in backend.run_turn(running):
            events.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        await meanwhile()
        mock.release()
    return events


async def steered(
    backend: CodexBackend, mock: ResponsesMock, running: Turn, when: Step
) -> list[BackendEvent]:
    """The events of `running`, its next model request held, steered once `when` returns."""

    async def steer() -> None:
        await when()
        await backend.steer(running, (TextContent(STEER),))

    return await while_held(backend, mock, running, steer)


def developer_texts(request: RecordedRequest) -> list[str]:
    return [
        str(part.get("text", ""))
        for item in request.input
        if item.get("role") == "developer"
        for part in item.get("content") or []
    ]


def collaboration_modes(request: RecordedRequest) -> list[str]:
    """The collaboration-mode instructions of the request, oldest first (their first line)."""
    return [t.splitlines()[0] for t in developer_texts(request) if t.startswith("<collaboration")]


async def test_capabilities_come_from_the_app_servers_model_list(
    make_backend: MakeBackend,
) -> None:
    backend = await make_backend()

    declared = backend.capabilities()

    assert declared.steer and declared.fork and declared.approvals and declared.resume
    # The mock is a custom model_provider: Codex's catalogue does not say what it serves.
    assert declared.models is None
    # gpt-5.5's reasoning efforts, as the pinned Codex's model/list reports them.
    assert declared.efforts == ("low", "medium", "high", "xhigh")
    assert declared.modes == ("default", "plan", "readOnly")
    assert declared.image_input


async def test_a_steer_reaches_the_running_turns_next_model_request_and_the_turn_ends_once(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    seen = Seen()
    backend = await make_backend(tap=seen)
    running = turn("Count the rows of the first table.")

    async def first_request_held() -> None:
        with anyio.fail_after(60):
            await mock.request(1)

    events = await steered(backend, mock, running, first_request_held)

    assert STEER not in mock.requests[0].texts("user")
    later = mock.after(1)
    assert later, "the steered text needs a model request of its own"
    assert later[-1].texts("user") == ["Count the rows of the first table.", STEER]
    assert not [e for e in events if isinstance(e, Failed)], events
    assert len([e for e in events if isinstance(e, Usage)]) == 1
    assert seen.methods["turn/started"] == 1
    assert seen.methods["turn/completed"] == 1


async def test_a_steer_without_a_running_turn_is_refused(make_backend: MakeBackend) -> None:
    backend = await make_backend()
    done = turn("hello", task="t1")
    await run(backend, done)

    with pytest.raises(SteerRefusedError):
        await backend.steer(done, (TextContent(STEER),))
    with pytest.raises(SteerRefusedError):
        await backend.steer(turn("never started", task="t2"), (TextContent(STEER),))


@pytest.mark.parametrize("source_loaded", [True, False], ids=["warm-source", "unloaded-source"])
async def test_a_fork_starts_from_the_source_history_and_leaves_the_source_untouched(
    make_backend: MakeBackend, mock: ResponsesMock, source_loaded: bool
) -> None:
    backend = await make_backend()
    source = session_of(await run(backend, turn("Remember PAPAYA.", task="s1", context="src")))
    if not source_loaded:
        await backend.drop_session(source)

    forking = replace(turn("Which word?", task="f1", context="fork"), fork_of=source)
    forked = await run(backend, forking)

    fork = session_of(forked)
    assert fork != source
    assert not [e for e in forked if isinstance(e, Failed)], forked
    assert mock.requests[-1].texts("user") == ["Remember PAPAYA.", "Which word?"]
    assert len(mock.requests[-1].texts("assistant")) == 1
    again = await run(backend, turn("And now?", session=source, task="s2", context="src"))
    assert session_of(again) == source
    assert mock.requests[-1].texts("user") == ["Remember PAPAYA.", "And now?"]
    follow = await run(backend, turn("Still forked?", session=fork, task="f2", context="fork"))
    assert session_of(follow) == fork
    assert mock.requests[-1].texts("user") == ["Remember PAPAYA.", "Which word?", "Still forked?"]


async def test_a_fork_of_an_unknown_session_fails_clearly_and_starts_nothing(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    gone = "019a0000-0000-7000-8000-000000000000"

    events = await run(backend, replace(turn("Which word?"), fork_of=gone))

    assert len(events) == 1 and isinstance(events[0], Failed), events
    assert events[0].message.startswith(f"Codex could not fork session {gone}.")
    assert mock.requests == []


async def test_a_model_and_an_effort_hold_for_their_turn_only(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    chosen = TurnOptions(model="gpt-5.4", effort="high")

    first = await run(backend, replace(turn("Use another model.", task="t1"), options=chosen))
    thread = session_of(first)
    await run(backend, turn("And the configured one?", session=thread, task="t2"))
    # After an unload, too: Codex keeps the last turn's settings in the thread's files.
    await run(backend, replace(turn("Again.", session=thread, task="t3"), options=chosen))
    await backend.drop_session(thread)
    await run(backend, turn("Back?", session=thread, task="t4"))

    sent = [
        (r.body.get("model"), (r.body.get("reasoning") or {}).get("effort")) for r in mock.requests
    ]
    assert sent == [
        ("gpt-5.4", "high"),
        (MODEL, "medium"),
        ("gpt-5.4", "high"),
        (MODEL, "medium"),
    ]


def _work(root: Path) -> Path:
    return root / "work"


@pytest.mark.parametrize("mode", ["readOnly", "plan"])
async def test_a_confined_turn_cannot_write_and_the_next_turn_can_again(
    make_backend: MakeBackend, mock: ResponsesMock, codex_root: Path, mode: Mode
) -> None:
    backend = await make_backend()
    work = _work(codex_root)
    before = sorted(p.name for p in work.iterdir())
    mock.turns.add([WriteFile("confined.txt", "should not exist")])

    confined = replace(turn("Write the file.", task="t1"), options=TurnOptions(mode=mode))
    events = await run(backend, confined)

    assert sorted(p.name for p in work.iterdir()) == before
    # Codex refuses the patch itself (no file-change item) and tells the model why.
    refusal = mock.requests[1].tool_outputs()
    assert "writing is blocked by read-only sandbox" in refusal[-1], refusal
    modes = collaboration_modes(mock.requests[0])
    assert (modes[-1].startswith("<collaboration_mode># Plan") if modes else False) == (
        mode == "plan"
    ), modes
    mock.turns.add([WriteFile("free.txt", "written")])
    thread = session_of(events)
    await run(backend, turn("Write it now.", session=thread, task="t2"))
    assert (work / "free.txt").read_text() == "written\n"
    later = collaboration_modes(mock.requests[-1])
    assert not later or not later[-1].startswith("<collaboration_mode># Plan"), later


async def test_a_read_only_turn_asks_nothing_even_when_the_caller_reviews(
    make_backend: MakeBackend, mock: ResponsesMock, codex_root: Path
) -> None:
    backend = await make_backend()
    marker = codex_root / "outside.txt"
    mock.turns.add([Shell(f"touch {marker}", escalate="The marker lives outside.")])
    asking = replace(turn("Touch it."), approvals="ask", options=TurnOptions(mode="readOnly"))

    events = await run(backend, asking)

    assert not [e for e in events if isinstance(e, ApprovalRequest)], events
    assert not marker.exists()
    assert not [e for e in events if isinstance(e, Failed)], events


async def test_a_steer_sent_while_the_thread_opens_waits_for_the_turn(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    seen = Seen()
    backend = await make_backend(tap=seen)
    thread = session_of(await run(backend, turn("Remember PAPAYA.", task="t1")))
    await backend.drop_session(thread)  # the next turn resumes it: a while before it starts
    running = turn("Count the rows of the first table.", session=thread, task="t2")

    # One checkpoint: the turn has begun opening its thread, nothing more.
    events = await steered(backend, mock, running, anyio.lowlevel.checkpoint)

    assert STEER in mock.requests[-1].texts("user")
    assert not [e for e in events if isinstance(e, Failed)], events
    assert seen.methods["turn/completed"] == 2


async def test_a_fork_of_a_thread_in_the_middle_of_a_turn_leaves_that_turn_alone(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    source = session_of(await run(backend, turn("Remember PAPAYA.", task="s1", context="src")))
    busy = turn("Think about it.", session=source, task="s2", context="src")
    forked: list[BackendEvent] = []

    async def fork() -> None:
        with anyio.fail_after(60):
            await mock.request(2)
        forking = replace(turn("Which word?", task="f1", context="fork"), fork_of=source)
        forked.extend(await run(backend, forking))

    events = await while_held(backend, mock, busy, fork)

    assert not [e for e in events + forked if isinstance(e, Failed)], events + forked
    # The fork has the source's finished turns; the running one stays the source's.
    fork_request = next(r for r in mock.requests if r.last_user_text == "Which word?")
    assert fork_request.texts("user") == ["Remember PAPAYA.", "Which word?"]
    again = await run(backend, turn("And now?", session=source, task="s3", context="src"))
    assert session_of(again) == source
    assert mock.requests[-1].texts("user") == ["Remember PAPAYA.", "Think about it.", "And now?"]
