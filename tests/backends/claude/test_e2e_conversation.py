"""One contextId is one Claude Code conversation: across turns, across a daemon restart, until
the session's ttl; usage lands in the task. Real app, real CLI, the project's mock model."""

from __future__ import annotations

import shutil

import pytest

from harness.mock_models.anthropic import AnthropicMock
from tests.backends.claude.conftest import (
    COMPLETED,
    MODEL,
    ClaudeEnv,
    FakeClock,
    StartDaemon,
    claude_processes,
    send,
    wait_exited,
    wrapper,
)


async def test_an_expired_session_starts_fresh_and_the_model_sees_no_earlier_history(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    clock = FakeClock()
    client = await start_daemon(claude_env.settings(session={"ttl": 60_000}), clock=clock)
    old = await send(client, "Remember the word PAPAYA.", "ctx-t")
    old_processes = claude_processes()

    clock.advance(seconds=61)
    fresh = await send(client, "Which word was it?", "ctx-t")

    assert fresh["status"]["state"] == COMPLETED
    request = await mock.wait_for_request(2)
    assert request.history() == "user[0]='Which word was it?'"
    assert wrapper(fresh)["expiredSession"] is True
    assert wrapper(fresh)["newSession"] is True
    assert wrapper(fresh)["sessionId"] != wrapper(old)["sessionId"]
    for pid in old_processes:  # the expired session's process was stopped
        await wait_exited(pid)


async def test_usage_lands_in_the_task_metadata(
    start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    client = await start_daemon()

    first = await send(client, "Hello there.", "ctx-u")
    second = await send(client, "Hello again.", "ctx-u")

    assert (await mock.wait_for_request(1)).model == MODEL
    usage = [wrapper(first)["usage"], wrapper(second)["usage"]]
    for turn in usage:
        assert turn["model"] == MODEL
        assert turn["inputTokens"] > 0
        assert turn["outputTokens"] > 0
        assert turn["costUsd"] > 0
    # Each turn's own cost (about the same for two such turns), not the session's running total.
    assert usage[1]["costUsd"] < 1.5 * usage[0]["costUsd"]


@pytest.mark.timeout(90)
async def test_a_session_missing_from_the_agent_state_starts_a_new_one(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    first_daemon = await start_daemon()
    old = await send(first_daemon, "Remember the word PAPAYA.", "ctx-m")
    await first_daemon.close()
    shutil.rmtree(claude_env.home / "projects")

    second_daemon = await start_daemon()
    task = await send(second_daemon, "Which word was it?", "ctx-m")

    assert task["status"]["state"] == COMPLETED
    assert (await mock.wait_for_request(2)).history() == "user[0]='Which word was it?'"
    assert wrapper(task)["sessionId"] != wrapper(old)["sessionId"]
