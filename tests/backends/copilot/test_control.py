"""Conversation control with the real CLI against the chat completions mock: what the backend
declares, steering a running turn, a native fork, a turn's own model and effort, and the plan
and readOnly modes that keep the workspace unchanged (docs/backends.md#copilot)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from copilot.session_events import SessionEvent, SessionIdleData, UserMessageData

from core.backend import (
    MODES,
    BackendEvent,
    Failed,
    FileContent,
    Mode,
    SessionBound,
    TextContent,
    TextDelta,
    Turn,
    TurnOptions,
)
from core.backend.control import Capabilities, SteerRefusedError, capabilities_of
from harness.mock_models.openai_chat import MODEL, OpenAIChatMock
from harness.mock_models.steps import CallTool, Hold, Say, Shell, WriteFile
from tests.backends.copilot.conftest import ConfigFactory
from tests.backends.copilot.test_events import recorded
from wrappers.copilot.backend import CopilotBackend
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.control import EFFORTS
from wrappers.copilot.sessions import WarmSession


def turn(
    text: str,
    *,
    session: str | None = None,
    task: str = "task-1",
    options: TurnOptions | None = None,
    fork_of: str | None = None,
) -> Turn:
    return Turn(
        principal="tester",
        context_id="ctx-" + task,
        task_id=task,
        message_id="m-" + task,
        session_id=session,
        parts=(TextContent(text),),
        options=options or TurnOptions(),
        fork_of=fork_of,
    )


async def run(backend: CopilotBackend, request: Turn) -> list[BackendEvent]:
    with anyio.fail_after(120):
        return [event async for event in backend.run_turn(request)]


def answer(events: list[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def session_of(events: list[BackendEvent]) -> str:
    bound = [e.session_id for e in events if isinstance(e, SessionBound)]
    assert bound, events
    return bound[-1]


@pytest.fixture
async def agent(copilot_block: ConfigFactory) -> AsyncIterator[CopilotBackend]:
    """The backend, started (its `serve`, crash watch and eviction, plays no part here)."""
    backend = CopilotBackend(CopilotConfig.model_validate(copilot_block()))
    await backend.start()
    try:
        yield backend
    finally:
        with anyio.fail_after(30):
            await backend.aclose()


async def test_it_declares_what_the_cli_does_and_any_model_of_a_byok_endpoint(
    agent: CopilotBackend, copilot_block: ConfigFactory
) -> None:
    assert capabilities_of(agent) == Capabilities(
        steer=True,
        fork=True,
        models=None,
        efforts=EFFORTS,
        modes=MODES,
        approvals=True,
        resume=True,
        image_input=True,
    )
    # The CLI told to allow everything itself never asks the callback the modes rest on.
    trusting = CopilotBackend(
        CopilotConfig.model_validate(
            copilot_block(dangerouslyAllowAllTools=True, env={"COPILOT_ALLOW_ALL": "true"})
        )
    )
    assert trusting.capabilities().modes == ("default",)


async def test_a_steered_message_reaches_the_running_turns_next_request_and_it_ends_once(
    agent: CopilotBackend, mock: OpenAIChatMock
) -> None:
    # The model's request is held while the caller steers; it then calls a tool.
    mock.turns.add([Hold(Shell("echo first-step")), Say("Done, with the other table.")])
    running = turn("Update the report from the SALES table.")
    events: list[BackendEvent] = []

    async def consume() -> None:
        events.extend(await run(agent, running))

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        held = await mock.wait_for_request(lambda r: "SALES table" in r.last_user_text)
        await agent.steer(running, (TextContent("No, use the other table: ORDERS_2024."),))
        mock.turns.release()

    after = mock.requests[mock.requests.index(held) + 1 :]
    assert after, "the turn went on after the held request"
    # The CLI takes the message at once (a command still running goes on in the background):
    # the very next request carries it.
    assert "No, use the other table: ORDERS_2024." in after[0].texts("user")[-2:]
    assert "echo first-step" in after[0].transcript
    assert answer(events)
    assert not any(isinstance(e, Failed) for e in events)
    # The turn ended once: the next turn's answer is its own, nothing of the steered one left.
    asked = len(mock.requests)
    follow = await run(agent, turn("and now?", session=session_of(events), task="task-2"))
    assert answer(follow).endswith("and now?")
    assert len(mock.requests) == asked + 1


async def test_steering_without_a_running_turn_is_refused(agent: CopilotBackend) -> None:
    done = turn("hello")
    await run(agent, done)

    with pytest.raises(SteerRefusedError):
        await agent.steer(done, (TextContent("too late"),))


async def test_a_fork_starts_from_the_sources_history_and_leaves_the_source_alone(
    agent: CopilotBackend, mock: OpenAIChatMock
) -> None:
    source = session_of(await run(agent, turn("the secret word is alpha")))

    forked = await run(agent, turn("what was the secret word?", task="fork", fork_of=source))
    fork = session_of(forked)
    assert fork != source
    assert "The secret word was alpha." in answer(forked)
    assert "the secret word is alpha" in mock.requests[-1].transcript

    await run(agent, turn("the secret word is beta", session=fork, task="fork-2"))
    back = await run(agent, turn("what was the secret word?", session=source, task="task-3"))
    assert session_of(back) == source
    assert "The secret word was alpha." in answer(back)
    assert "beta" not in mock.requests[-1].transcript


async def test_a_fork_of_an_unknown_session_fails_and_never_starts_a_fresh_one(
    agent: CopilotBackend, mock: OpenAIChatMock
) -> None:
    events = await run(agent, turn("hello", fork_of="5b0d6a8e-0000-4000-8000-000000000000"))

    assert [type(e) for e in events] == [Failed]
    failed = events[0]
    assert isinstance(failed, Failed)
    assert failed.message.startswith("The Copilot CLI could not fork")
    assert not mock.requests


async def test_a_turns_model_and_effort_last_that_turn_only(
    agent: CopilotBackend, mock: OpenAIChatMock
) -> None:
    session = session_of(await run(agent, turn("first")))
    assert mock.requests[-1].model == MODEL
    assert "reasoning_effort" not in mock.requests[-1].body

    chosen = TurnOptions(model="other-model", effort="high")
    await run(agent, turn("second", session=session, task="t2", options=chosen))
    assert mock.requests[-1].model == "other-model"
    assert mock.requests[-1].body["reasoning_effort"] == "high"

    await run(agent, turn("third", session=session, task="t3"))
    assert mock.requests[-1].model == MODEL
    assert "reasoning_effort" not in mock.requests[-1].body


@pytest.mark.parametrize("mode", ["readOnly", "plan"])
async def test_a_mode_that_may_not_edit_leaves_the_workspace_unchanged(
    agent: CopilotBackend, mock: OpenAIChatMock, project: Path, mode: Mode
) -> None:
    before = _files(project)
    readme = str(project / "README.md")
    mock.turns.add(
        [WriteFile(str(project / "notes.txt"), "changed"), Shell("echo hi > shell.txt")],
        [CallTool("view", {"path": readme}), Shell(f"echo gone > {readme}")],
    )
    options = TurnOptions(mode=mode)

    events = await run(agent, turn("write the notes", options=options))
    session = session_of(events)
    written = mock.requests[-1].tool_outputs()
    read = await run(agent, turn("read it", session=session, task="t2", options=options))
    viewed = mock.requests[-1].tool_outputs()[-2:]

    assert _files(project) == before
    # Refused by the permission callback (or, in plan mode, by the CLI's plan mode first).
    assert len(written) == 2
    assert all(_refused(o, mode) for o in written)
    assert "scratch project for the copilot tests" in viewed[0]  # reading works
    assert _refused(viewed[1], mode)
    assert not any(isinstance(e, Failed) for e in events + read)
    assert ("<plan_mode>" in mock.requests[0].last_user_text) == (mode == "plan")

    # The next turn, in the configured mode, writes.
    mock.turns.add([WriteFile(str(project / "notes.txt"), "changed")])
    await run(agent, turn("write it now", session=session, task="t3"))
    assert (project / "notes.txt").read_text() == "changed"
    assert "<plan_mode>" not in mock.requests[-1].last_user_text


def _files(project: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in project.iterdir()}


def _refused(output: str, mode: Mode) -> bool:
    plan = mode == "plan" and "Plan mode does not permit changes outside the session" in output
    return plan or f"in {mode} mode, where this turn may read but not change" in output


# A 1x1 transparent PNG.
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63000100000500010d0a2db40000000049454e44ae426082"
)


async def test_an_image_part_reaches_the_model_as_an_image(
    agent: CopilotBackend, mock: OpenAIChatMock
) -> None:
    request = Turn(
        principal="tester",
        context_id="ctx-image",
        task_id="image",
        message_id="m-image",
        session_id=None,
        parts=(
            TextContent("what is in this picture?"),
            FileContent(data=PNG, name="dot.png", media_type="image/png"),
        ),
    )

    events = await run(agent, request)

    assert not any(isinstance(e, Failed) for e in events)
    body = mock.requests[-1].dump()
    assert "data:image/png;base64," + base64.b64encode(PNG).decode() in body


def test_a_steer_the_cli_takes_after_the_run_ended_keeps_the_turn_to_its_next_idle() -> None:
    # Recorded events of one turn; the steered message's `user.message` comes after its idle
    # (it was sent as the run ended), then the run it started, then that run's idle.
    events = recorded("text_turn")
    prompt = next(e for e in events if isinstance(e.data, UserMessageData))
    assert isinstance(prompt.data, UserMessageData)
    idle = events[-1]
    assert isinstance(idle.data, SessionIdleData)
    steered = replace(prompt, data=replace(prompt.data, message_id="steered", content="more"))
    warm = WarmSession("s", cast(Any, None), cast(Any, None))
    active = warm.begin("task")
    active.prompt_id = prompt.data.message_id
    active.steering = 1

    for event in events:
        warm.dispatch(event)
    assert not active.done.is_set()  # the first idle is not the turn's end
    warm.dispatch(steered)
    warm.dispatch(idle)

    assert active.done.is_set()
    seen = []
    while True:
        try:
            seen.append(active.receive.receive_nowait())
        except anyio.WouldBlock:
            break
    warm.end()
    assert [e for e in seen if isinstance(e, SessionEvent) and e is idle] == [idle]
    assert seen[-2:] == [steered, idle]
