"""Conversation control with the real OpenCode against the mock model, at the backend's level:
what it declares, steering a running turn, forking a session, a model, an effort or a mode for
one turn (docs/backends.md#opencode). The contract cases (tests/contract/test_control.py) drive
the same through the daemon."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.backend import (
    BackendEvent,
    Mode,
    SessionBound,
    TextContent,
    TextDelta,
    ToolCall,
    Turn,
    TurnOptions,
)
from core.backend.base import running
from core.backend.control import SteerRefusedError, capabilities_of
from harness.mock_models.openai_chat import ChatRequest, OpenAIChatMock
from harness.mock_models.steps import CallTool, Hold, Say, Shell
from harness.opencode import TEST_ENV, provider_config
from wrappers.opencode import create
from wrappers.opencode.backend import OpencodeBackend
from wrappers.opencode.config import OpencodeConfig

pytestmark = pytest.mark.timeout(120)


def mock_config(mock: OpenAIChatMock) -> dict[str, Any]:
    """The mock provider with two models; the configured one has two effort variants."""
    config = provider_config(mock.base_url)
    models = config["provider"]["mock"]["models"]
    models["mock-model"]["variants"] = {
        "low": {"reasoningEffort": "low"},
        "high": {"reasoningEffort": "high"},
    }
    models["mock-model-b"] = {**models["mock-model"], "name": "Mock B", "variants": {}}
    return config


@asynccontextmanager
async def backend_for(
    project: Path, tmp_path: Path, binary: Path, mock: OpenAIChatMock, **extra: Any
) -> AsyncIterator[OpencodeBackend]:
    config = OpencodeConfig.model_validate(
        {
            "workingDirectory": str(project),
            "home": str(tmp_path / "opencode-home"),
            "cliPath": str(binary),
            "model": "mock/mock-model",
            "env": TEST_ENV,
            "config": mock_config(mock),
            **extra,
        }
    )
    backend = create(config)
    async with running(backend):
        yield backend


def turn(
    text: str,
    *,
    session_id: str | None = None,
    task_id: str = "t-1",
    options: TurnOptions | None = None,
    fork_of: str | None = None,
    cwd: Path | None = None,
) -> Turn:
    return Turn(
        "p",
        "ctx",
        task_id,
        "m",
        session_id,
        (TextContent(text),),
        options=options or TurnOptions(),
        fork_of=fork_of,
        cwd=cwd,
    )


async def run(backend: OpencodeBackend, one: Turn) -> tuple[str, str, list[BackendEvent]]:
    """(session id, answer text, every event) of one whole turn."""
    events = [event async for event in backend.run_turn(one)]
    session = next(e.session_id for e in events if isinstance(e, SessionBound))
    return session, "".join(e.text for e in events if isinstance(e, TextDelta)), events


def requests_after(mock: OpenAIChatMock, seen: int) -> list[ChatRequest]:
    """The main-loop requests (those offering tools) since `seen` requests."""
    return [r for r in mock.requests[seen:] if r.tool_names]


def written(project: Path) -> list[str]:
    """What the turns wrote into the project (it starts with its README only)."""
    return sorted(p.name for p in project.iterdir() if p.name != "README.md")


async def test_it_declares_what_the_server_offers(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    async with backend_for(project, tmp_path, opencode_binary, mock) as backend:
        declared = capabilities_of(backend)

    assert declared.steer
    assert declared.fork
    assert declared.models == ("mock/mock-model", "mock/mock-model-b")
    assert declared.efforts == ("low", "high")  # the configured model's variants
    assert declared.modes == ("default", "plan", "readOnly")
    assert declared.approvals
    assert declared.resume


async def test_a_steer_reaches_the_running_turns_next_request_and_the_turn_ends_once(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    # The shell tool runs until the test lets it go, so the steer surely comes mid-turn.
    release = project / "go"
    mock.turns.add(
        [Shell(f"while [ ! -f {release} ]; do sleep 0.1; done; echo released")],
        [Say("Switched to the other table.")],
    )
    async with backend_for(project, tmp_path, opencode_binary, mock) as backend:
        running_turn = turn("Count the rows of the first table.")
        events: list[BackendEvent] = []
        tool_running = anyio.Event()
        ended = 0

        async def follow() -> None:
            nonlocal ended
            async for event in backend.run_turn(running_turn):
                events.append(event)
                if isinstance(event, ToolCall):
                    tool_running.set()
            ended += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await tool_running.wait()
            session = next(e.session_id for e in events if isinstance(e, SessionBound))
            bound = replace(running_turn, session_id=session)
            await backend.steer(bound, (TextContent("No, use the other table."),))
            release.write_text("")

        with pytest.raises(SteerRefusedError):  # the turn is over
            await backend.steer(bound, (TextContent("too late"),))

    assert ended == 1
    main = [r for r in mock.requests if r.tool_names]
    assert len(main) == 2
    # The request after the tool's result is the running turn's next one: it carries both.
    assert main[1].tool_outputs() == ["released\n"]
    assert "No, use the other table." in main[1].last_user_text
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert answer.endswith("Switched to the other table.")


async def test_a_steer_during_the_final_answer_makes_the_turn_go_on_and_end_once(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    # The model's last answer is held open while the steer arrives: OpenCode's loop sees a
    # user message newer than that answer and asks the model again, in the same turn.
    mock.turns.add([Hold(Say("Counted the first table."))], [Say("Counted the other table.")])
    async with backend_for(project, tmp_path, opencode_binary, mock) as backend:
        running_turn = turn("Count the rows of the first table.")
        events: list[BackendEvent] = []
        bound = anyio.Event()

        async def follow() -> None:
            async for event in backend.run_turn(running_turn):
                events.append(event)
                if isinstance(event, SessionBound):
                    bound.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow)
            await bound.wait()
            with anyio.fail_after(60):  # the held request is open
                await mock.wait_for_request(lambda r: bool(r.tool_names))
            session = next(e.session_id for e in events if isinstance(e, SessionBound))
            await backend.steer(
                replace(running_turn, session_id=session), (TextContent("No, the other one."),)
            )
            mock.turns.release()

    main = [r for r in mock.requests if r.tool_names]
    assert len(main) == 2
    assert "No, the other one." in main[1].last_user_text
    assert "Counted the first table." in main[1].texts("assistant")
    answer = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert answer == "Counted the first table.\n\nCounted the other table."


async def test_a_fork_carries_the_source_history_and_the_source_never_sees_the_fork(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    elsewhere = tmp_path / "fork-workspace"
    elsewhere.mkdir()
    async with backend_for(project, tmp_path, opencode_binary, mock) as backend:
        source, _, _ = await run(backend, turn("Remember: the secret word is LIME."))

        seen = len(mock.requests)
        fork, answer, _ = await run(
            backend, turn("What was the secret word?", task_id="t-2", fork_of=source)
        )
        assert fork != source
        assert answer == "The secret word was LIME."
        assert "LIME" in requests_after(mock, seen)[0].transcript
        _, changed, _ = await run(
            backend, turn("Now the secret word is MANGO.", session_id=fork, task_id="t-3")
        )
        assert "MANGO" in changed

        seen = len(mock.requests)
        _, answer, _ = await run(
            backend, turn("What was the secret word?", session_id=source, task_id="t-4")
        )
        assert answer == "The secret word was LIME."
        assert "MANGO" not in requests_after(mock, seen)[0].transcript

        # A fork for another workspace works there (worktree and copy mode give it one).
        command = json.dumps({"command": "pwd", "description": "where"})
        moved, answer, _ = await run(
            backend,
            turn(f"MOCK_TOOL bash {command}", task_id="t-5", fork_of=source, cwd=elsewhere),
        )
        assert moved not in (source, fork)
        assert answer == f"TOOL RESULT SEEN: {elsewhere}\n"


async def test_a_missing_source_fails_the_fork_instead_of_starting_fresh(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    async with backend_for(project, tmp_path, opencode_binary, mock) as backend:
        events = [e async for e in backend.run_turn(turn("hi", fork_of="ses_gone"))]

    assert not any(isinstance(e, SessionBound) for e in events)
    assert [type(e).__name__ for e in events] == ["Failed"]
    assert "no longer in OpenCode" in str(events[0])
    assert not mock.requests


async def test_a_model_and_an_effort_hold_for_their_turn_only(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    async with backend_for(project, tmp_path, opencode_binary, mock) as backend:
        session, _, _ = await run(
            backend, turn("one", options=TurnOptions(model="mock/mock-model-b"))
        )
        seen = len(mock.requests)
        await run(backend, turn("two", session_id=session, task_id="t-2"))
        after = requests_after(mock, seen)
        seen = len(mock.requests)
        await run(
            backend,
            turn("three", session_id=session, task_id="t-3", options=TurnOptions(effort="high")),
        )
        effort = requests_after(mock, seen)
        seen = len(mock.requests)
        await run(backend, turn("four", session_id=session, task_id="t-4"))
        plain = requests_after(mock, seen)

    first = next(r for r in mock.requests if r.tool_names)
    assert first.model == "mock-model-b"
    assert [r.model for r in after] == ["mock-model"]
    assert [r.body.get("reasoning_effort") for r in effort] == ["high"]
    assert [r.body.get("reasoning_effort") for r in plain] == [None]


WRITES: Sequence[CallTool] = (
    CallTool("write", {"filePath": "notes.txt", "content": "written"}),
    CallTool("bash", {"command": "echo written > shell.txt", "description": "write"}),
)


@pytest.mark.parametrize("mode", ["default", "plan", "readOnly"])
async def test_plan_and_read_only_turns_leave_the_workspace_unchanged(
    project: Path, tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock, mode: Mode
) -> None:
    # The operator allows edits and commands: a mode still denies them (its agent's rules
    # come after the global map). The default mode shows the script does write.
    mock.turns.add(list(WRITES))
    permission = {"edit": "allow", "bash": "allow"}
    async with backend_for(
        project, tmp_path, opencode_binary, mock, permission=permission
    ) as backend:
        session, _, _ = await run(backend, turn("Write the notes.", options=TurnOptions(mode=mode)))
        offered = [r.tool_names for r in mock.requests if r.tool_names]
        seen = len(mock.requests)
        await run(backend, turn("Write them now.", session_id=session, task_id="t-2"))
        after = [r.tool_names for r in requests_after(mock, seen)]

    if mode == "default":
        assert written(project) == ["notes.txt", "shell.txt"]
        return
    assert written(project) == []
    assert not {"write", "edit", "bash", "task"} & {t for names in offered for t in names}
    # The next turn, in the default mode, has its tools back.
    assert {"write", "bash"} <= set(after[0])
