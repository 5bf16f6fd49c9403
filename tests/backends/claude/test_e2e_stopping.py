"""Turns that do not end well: cancel, model errors, a stalled model, deadlines, a crashed agent.
Each must stop the agent for real and leave the context usable. Real app, real CLI, mock model."""

from __future__ import annotations

import os
import signal
import time
from typing import Any

import anyio
import pytest

from harness.mock_models.anthropic import AnthropicMock
from harness.mock_models.steps import Hang, Upstream
from tests.backends.claude.conftest import (
    COMPLETED,
    FAILED,
    ClaudeEnv,
    StartDaemon,
    answer,
    claude_processes,
    send,
    stream,
    wait_exited,
    wrapper,
)
from wrappers.claude.backend import CRASHED


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (500, "The model endpoint failed (HTTP 500)"),
        (529, "The model endpoint is overloaded (HTTP 529)"),
    ],
)
async def test_a_failing_model_endpoint_fails_the_task_with_a_clear_message(
    start_daemon: StartDaemon, mock: AnthropicMock, status: int, expected: str
) -> None:
    mock.turns.add([Upstream(status)])
    client = await start_daemon()

    task = await send(client, "fail please", "ctx-e")

    assert task["status"]["state"] == FAILED
    assert answer(task).startswith(expected)
    assert len(mock.model_requests) == 1
    assert "artifacts" not in task, "the CLI's own error text is not an answer"
    after = await send(client, "And now?", "ctx-e")
    assert after["status"]["state"] == COMPLETED


async def test_rejected_credentials_fail_the_task_and_name_the_variable(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    wrong_key: dict[str, Any] = {"claude": {"env": {"ANTHROPIC_API_KEY": "sk-ant-wrong"}}}
    client = await start_daemon(claude_env.settings(**wrong_key))

    task = await send(client, "Hello?", "ctx-401")

    assert task["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
    message = answer(task)
    assert message.startswith("The model endpoint rejected the credentials (HTTP 401)")
    assert "ANTHROPIC_API_KEY" in message
    assert "sk-ant-wrong" not in message
    assert (await mock.wait_for_request(1)).headers["x-api-key"].endswith("...")


async def test_missing_credentials_fail_the_task_and_say_how_to_provide_them(
    claude_env: ClaudeEnv,
    start_daemon: StartDaemon,
    mock: AnthropicMock,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    client = await start_daemon(claude_env.settings(credentials=False))

    task = await send(client, "Hello?", "ctx-nokey")

    assert task["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
    message = answer(task)
    assert message.startswith("Claude Code has no credentials for the model endpoint")
    assert "ANTHROPIC_API_KEY" in message
    assert "claude /login" in message
    assert mock.model_requests == []


async def test_an_endpoint_retried_by_the_agent_is_bounded_by_the_turn_deadline(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    # With its default retries, Claude Code keeps retrying a 529 with backoff: only the
    # daemon's deadline ends the turn.
    retrying: dict[str, Any] = {"claude": {"env": {"CLAUDE_CODE_MAX_RETRIES": "10"}}}
    client = await start_daemon(claude_env.settings(timeouts={"turn": 6000}, **retrying))
    await send(client, "Hello.", "ctx-retry")  # warm: the deadline measures the retries only
    mock.turns.add([Upstream(529)])  # its retries too

    started = time.monotonic()
    task = await send(client, "overloaded", "ctx-retry")

    assert task["status"]["state"] == FAILED
    assert "timeouts.turn (6 s)" in answer(task)
    assert time.monotonic() - started < 6 + 4
    assert len(mock.model_requests) >= 3, "the agent retried until the deadline"
    assert all(r.finished.is_set() or r.disconnected.is_set() for r in mock.model_requests)


async def test_an_agent_that_dies_mid_turn_fails_the_task_and_the_next_turn_resumes(
    start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    client = await start_daemon()
    first = await send(client, "Remember the word PAPAYA.", "ctx-x")
    mock.turns.add([Hang()])
    (pid,) = claude_processes()
    events: list[dict[str, Any]] = []

    async with anyio.create_task_group() as tg:

        async def stalled_turn() -> None:
            events.extend(await stream(client, "stall now", "ctx-x"))

        tg.start_soon(stalled_turn)
        await mock.wait_for_request(2)
        os.kill(pid, signal.SIGKILL)

    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == FAILED
    assert final["message"]["parts"][0]["text"] == CRASHED
    await wait_exited(pid)
    after = await send(client, "Which word was it?", "ctx-x")
    assert after["status"]["state"] == COMPLETED
    # When the killed turn's prompt reached the transcript, the resumed CLI closes that turn
    # with a note of its own; the earlier answer is there either way.
    assert (await mock.wait_for_request(3)).texts("assistant")[0] == answer(first)
    assert wrapper(after)["sessionId"] == wrapper(first)["sessionId"]
    assert pid not in claude_processes()


async def test_a_warm_process_that_died_between_turns_is_replaced_transparently(
    start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    client = await start_daemon()
    first = await send(client, "Remember the word PAPAYA.", "ctx-d")
    (pid,) = claude_processes()
    os.kill(pid, signal.SIGKILL)
    await wait_exited(pid)

    after = await send(client, "Which word was it?", "ctx-d")

    assert after["status"]["state"] == COMPLETED
    assert (await mock.wait_for_request(2)).texts("assistant") == [answer(first)]
    assert wrapper(after)["sessionId"] == wrapper(first)["sessionId"]
