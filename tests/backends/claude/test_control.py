"""Conversation control on the Claude backend itself (wrappers/claude/control.py), with the real
CLI against the Anthropic mock: a message steered into a running turn, a forked session, a
model, an effort or a mode chosen for one turn only, and the image input it declares."""

from __future__ import annotations

import base64
import json
import struct
import uuid
import zlib
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import Any

import anyio
import pytest

from core.backend import (
    BackendEvent,
    Failed,
    FileContent,
    SessionBound,
    TextContent,
    TextDelta,
    ToolCall,
    Turn,
    TurnOptions,
    Usage,
)
from core.backend.base import running
from core.backend.control import SteerRefusedError, capabilities_of
from harness.mock_models.anthropic import AnthropicMock, Reply
from harness.mock_models.steps import Say, Shell, WriteFile
from tests.backends.claude.conftest import MODEL, ClaudeEnv
from wrappers.claude import create
from wrappers.claude.backend import FORK_SOURCE_MISSING, ClaudeBackend
from wrappers.claude.config import ClaudeConfig

STEER = "STEERED: use the other table"


def user_turn(text: str, context: str = "ctx", session: str | None = None, **kw: Any) -> Turn:
    return Turn(
        principal="alice",
        context_id=context,
        task_id=uuid.uuid4().hex,
        message_id=uuid.uuid4().hex,
        session_id=session,
        parts=(TextContent(text),),
        **kw,
    )


@asynccontextmanager
async def claude(env: ClaudeEnv, **block: Any) -> AsyncIterator[ClaudeBackend]:
    backend = create(env.settings(claude=block).block(ClaudeConfig))
    async with running(backend):
        yield backend


async def run(backend: ClaudeBackend, turn: Turn) -> list[BackendEvent]:
    return [event async for event in backend.run_turn(turn)]


def session_of(events: Sequence[BackendEvent]) -> str:
    (bound,) = [e.session_id for e in events if isinstance(e, SessionBound)]
    return bound


def text_of(events: Sequence[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def tool_requests(mock: AnthropicMock) -> list[Any]:
    """The agent loop's model requests (not the CLI's side requests, which offer no tools)."""
    return [r for r in mock.model_requests if r.offers_tools]


def test_it_declares_steer_fork_any_model_its_efforts_and_the_modes(
    claude_env: ClaudeEnv,
) -> None:
    backend = create(claude_env.settings().block(ClaudeConfig))

    assert capabilities_of(backend).record() == {
        "steer": True,
        "fork": True,
        "models": None,
        "efforts": ["low", "medium", "high", "xhigh", "max"],
        "modes": ["default", "plan", "readOnly"],
        "approvals": True,
        "resume": True,
        "imageInput": True,
    }


async def test_a_steered_message_reaches_the_next_model_request_of_the_running_turn(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    gate = claude_env.workdir / "go"
    wait = f"while [ ! -e {gate} ]; do sleep 0.1; done; echo released"
    mock.turns.add([Shell(wait), Say("Done, with the other table.")])
    async with claude(claude_env, allowedTools=["Bash"]) as backend:
        turn = user_turn("Fill the table.")
        events: list[BackendEvent] = []
        async for event in backend.run_turn(turn):
            events.append(event)
            if isinstance(event, ToolCall):  # the shell waits for the gate: the turn runs
                await backend.steer(turn, (TextContent(STEER),))
                gate.touch()

        after = tool_requests(mock)
        follow_up = await run(backend, user_turn("And now?", session=session_of(events)))

    assert not [e for e in events if isinstance(e, Failed)], events
    assert text_of(events) == "Done, with the other table."
    assert len([e for e in events if isinstance(e, Usage)]) == 1  # the turn ended once
    assert len(after) == 2
    assert STEER not in after[0].dump()
    assert STEER in after[1].dump()  # with the shell's result, in the same turn
    assert not [e for e in follow_up if isinstance(e, Failed)]
    assert tool_requests(mock)[2].last_user_text == "And now?"


async def test_a_message_steered_while_the_answer_streams_is_answered_in_the_same_turn(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    mock.on("^Think slowly", Reply(text="First thoughts.", stall=30))
    async with claude(claude_env) as backend:
        turn = user_turn("Think slowly.")
        async with anyio.create_task_group() as tg:
            results: list[list[BackendEvent]] = []

            async def consume() -> None:
                results.append(await run(backend, turn))

            tg.start_soon(consume)
            await mock.wait_for_request(1)  # the model is answering: no tool result is due
            await backend.steer(turn, (TextContent(STEER),))
            mock.release()
        (events,) = results

    # Claude Code runs the message as its next turn once the answer is out; the backend's
    # turn goes on until then, and ends once.
    assert not [e for e in events if isinstance(e, Failed)], events
    second = tool_requests(mock)[1]
    assert second.last_user_text == STEER
    assert text_of(events).startswith("First thoughts.\n\nMOCK_REPLY #2")
    # One Usage, counting both of the CLI's parts (the mock counts a request's input as a
    # quarter of its messages' JSON).
    (usage,) = [e for e in events if isinstance(e, Usage)]
    parts = tool_requests(mock)[:2]
    assert usage.input_tokens == sum(len(json.dumps(r.messages)) // 4 for r in parts)


async def test_steering_a_turn_that_is_not_running_is_refused(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    async with claude(claude_env) as backend:
        done = user_turn("Hello.")
        await run(backend, done)

        with pytest.raises(SteerRefusedError):
            await backend.steer(done, (TextContent(STEER),))
        with pytest.raises(SteerRefusedError):
            await backend.steer(user_turn("Never sent.", context="other"), (TextContent("x"),))


async def test_a_fork_starts_from_the_source_history_and_leaves_the_source_alone(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    async with claude(claude_env) as backend:
        source = session_of(await run(backend, user_turn("Remember the word PAPAYA.")))
        forked = await run(backend, user_turn("Fork question.", context="fork", fork_of=source))
        fork = session_of(forked)
        fork_request = tool_requests(mock)[1]
        await run(backend, user_turn("Source question.", session=source))
        source_request = tool_requests(mock)[2]
        await run(backend, user_turn("Fork again.", context="fork", session=fork))
        fork_again = tool_requests(mock)[3]

    assert fork != source
    assert fork_request.history().startswith("user[0]='Remember the word PAPAYA.' | assistant[0]")
    assert fork_request.last_user_text == "Fork question."
    assert "Fork question." not in source_request.history()
    assert source_request.history().startswith("user[0]='Remember the word PAPAYA.'")
    assert "Fork question." in fork_again.history()
    assert "Source question." not in fork_again.history()


async def test_a_fork_of_a_session_claude_code_does_not_have_fails_and_starts_nothing(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    async with claude(claude_env) as backend:
        missing = str(uuid.uuid4())
        events = await run(backend, user_turn("Fork it.", context="fork", fork_of=missing))

    assert events == [Failed("error", FORK_SOURCE_MISSING)]
    assert tool_requests(mock) == []


async def test_a_model_chosen_for_one_turn_is_used_for_that_turn_only(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    async with claude(claude_env) as backend:
        first = await run(backend, user_turn("Hello."))
        session = session_of(first)
        chosen = await run(
            backend,
            user_turn(
                "Hello, Haiku.", session=session, options=TurnOptions(model="claude-haiku-4-5")
            ),
        )
        after = await run(backend, user_turn("Hello again.", session=session))

    models = [r.model for r in tool_requests(mock)]
    assert models == [MODEL, "claude-haiku-4-5", MODEL]
    assert [e.model for e in chosen if isinstance(e, Usage)] == ["claude-haiku-4-5"]
    assert [e.model for e in after if isinstance(e, Usage)] == [MODEL]


async def test_an_effort_chosen_for_one_turn_is_sent_for_that_turn_only(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    # Claude Code sends an effort only for models that have efforts (not claude-sonnet-4-5).
    async with claude(claude_env, model="claude-sonnet-4-6") as backend:
        session = session_of(await run(backend, user_turn("Hello.")))
        low = TurnOptions(effort="low")
        await run(backend, user_turn("Think little.", session=session, options=low))
        await run(backend, user_turn("Think as usual.", session=session))

    efforts = [(r.body.get("output_config") or {}).get("effort") for r in tool_requests(mock)]
    assert efforts[1] == "low"
    assert efforts[0] == efforts[2] != "low"
    # The effort's process resumed the session: the model saw the whole conversation.
    history = tool_requests(mock)[2].history()
    assert history.startswith("user[0]='Hello.'")
    assert "| user[1]='Think little.' |" in history


@pytest.mark.parametrize("mode", ["readOnly", "plan"])
async def test_a_read_only_or_plan_turn_writes_nothing_even_where_writes_are_allowed(
    claude_env: ClaudeEnv, mock: AnthropicMock, mode: str
) -> None:
    work = claude_env.workdir
    # Everything pre-approved: only the mode stands between the model and the workspace.
    allow = {"allowedTools": ["Bash", "Write", "Edit"], "permissionMode": "acceptEdits"}
    mock.turns.add(
        [WriteFile(str(work / "written.txt"), "hi"), Shell(f"echo ran > {work}/shell.txt")],
        [WriteFile(str(work / "later.txt"), "hi")],
    )
    async with claude(claude_env, **allow) as backend:
        options = TurnOptions(mode=mode)  # type: ignore[arg-type]
        held = await run(backend, user_turn("Write the files.", options=options))
        then = await run(backend, user_turn("Write one now.", session=session_of(held)))

    assert sorted(p.name for p in work.iterdir()) == ["later.txt"]
    outputs = tool_requests(mock)[2].tool_outputs()
    assert len(outputs) == 2
    assert all("no tool that edits files or runs commands" in o for o in outputs), outputs
    assert not [e for e in held + then if isinstance(e, Failed)]
    if mode == "plan":
        assert "plan mode" in json.dumps(tool_requests(mock)[0].body).lower()


async def test_a_turn_interrupted_with_a_steered_message_untaken_leaves_no_trace_in_the_next(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    mock.on("^Think slowly", Reply(text="Never finished.", stall=60))
    async with claude(claude_env) as backend:
        session = session_of(await run(backend, user_turn("Hello.")))
        turn = user_turn("Think slowly.", session=session)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, backend, turn)
            await mock.wait_for_request(2)
            await backend.steer(turn, (TextContent(STEER),))
            tg.cancel_scope.cancel()
        await backend.interrupt(turn)
        mock.release()
        events = await run(backend, user_turn("Next.", session=session))

    # Claude Code would have run the untaken message right after its interrupt: its process
    # was stopped instead, and the next turn resumed the session in a new one.
    assert not [e for e in events if isinstance(e, Failed)], events
    (answered,) = [r for r in tool_requests(mock) if r.last_user_text == "Next."]
    assert text_of(events) == f"MOCK_REPLY #{mock.model_requests.index(answered) + 1} history: " + (
        answered.history()
    )
    assert not any(r.last_user_text == STEER for r in tool_requests(mock))


def _png() -> bytes:
    """A valid 1x1 PNG (Claude Code reads an image before it sends it)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


async def test_an_attached_image_reaches_the_model_as_an_image(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    image = FileContent(data=_png(), name="dot.png", media_type="image/png")
    async with claude(claude_env) as backend:
        turn = user_turn("What is in the picture?")
        events = await run(backend, replace(turn, parts=(*turn.parts, image)))

    assert not [e for e in events if isinstance(e, Failed)], events
    (request,) = tool_requests(mock)
    blocks = [b for m in request.messages for b in m["content"] if isinstance(b, dict)]
    images = [b["source"] for b in blocks if b.get("type") == "image"]
    assert [(s["media_type"], base64.b64decode(s["data"])) for s in images] == [
        ("image/png", _png())
    ]
