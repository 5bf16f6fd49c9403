"""E2E: the daemon's real app, the real `opencode serve`, the project's mock model.

Proves continuation across turns and across a daemon restart, usage in the task metadata, and
a tool-using turn shown as progress.
"""

from __future__ import annotations

import asyncio
import base64
import os
import signal
import sys
from pathlib import Path

import pytest

from harness.mock_models.openai_chat import OpenAIChatMock, ToolCallReply
from harness.mock_models.steps import Hang, Shell
from tests.backends.opencode.conftest import MakeSettings, StartDaemon
from tests.backends.opencode.support import answer, send, status_text, wrapper_metadata
from tests.support.wire import call
from wrappers.opencode import create
from wrappers.opencode.config import OpencodeConfig

pytestmark = pytest.mark.timeout(120)


async def test_two_turns_continue_one_session_and_usage_lands_in_metadata(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    client = await start_daemon(opencode_settings())

    first = await send(client, "Remember: the secret word is KIWI.", context_id="ctx-1")
    second = await send(client, "What was the secret word?", context_id="ctx-1", message_id="m-2")

    assert first["status"]["state"] == "TASK_STATE_COMPLETED", first
    assert answer(first) == "Noted. The secret word is KIWI."
    assert second["status"]["state"] == "TASK_STATE_COMPLETED", second
    assert answer(second) == "The secret word was KIWI."
    # The model request of turn 2 carried turn 1's prompt and answer.
    turn2 = await mock.wait_for_request("What was the secret word?")
    assert turn2.roles[-3:] == ["user", "assistant", "user"]
    assert "the secret word is KIWI" in turn2.texts("user")[0]
    assert "Noted. The secret word is KIWI." in turn2.texts("assistant")[0]
    meta1, meta2 = wrapper_metadata(first), wrapper_metadata(second)
    assert meta1["backend"] == "opencode"
    assert meta1["sessionId"].startswith("ses_")
    assert meta2["sessionId"] == meta1["sessionId"]
    usage = meta2["usage"]
    assert usage["model"] == "mock-model"
    assert usage["inputTokens"] > 0
    assert usage["outputTokens"] == 5  # the mock counts words


async def test_a_tool_call_shows_as_progress_and_the_turn_completes(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    mock.turns.add([Shell("echo tool-ran")])
    client = await start_daemon(opencode_settings())
    response = await client.post(
        "/a2a/jsonrpc",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendStreamingMessage",
            "params": {
                "message": {
                    "messageId": "m-1",
                    "role": "ROLE_USER",
                    "parts": [{"text": "Please use the shell."}],
                }
            },
        },
        headers={"A2A-Version": "1.0"},
    )
    body = (await response.read()).decode()
    assert "Running `" in body
    assert "TASK_STATE_COMPLETED" in body
    assert "TOOL RESULT SEEN: tool-ran" in body
    follow_up = mock.requests[-1]
    assert follow_up.last_role == "tool"
    assert "tool-ran" in follow_up.messages[-1]["content"]


async def test_a_crashed_server_fails_its_turn_and_the_next_turn_restarts_it(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    settings = opencode_settings()
    backend = create(settings.block(OpencodeConfig))
    daemon = await start_daemon(settings, backend=backend)
    await send(daemon, "Remember: the secret word is PLUM.", context_id="ctx-c")
    mock.turns.add([Hang()])
    pending = asyncio.ensure_future(
        send(daemon, "Please take your time.", context_id="ctx-c", message_id="m-2")
    )
    await mock.wait_for_request("take your time")
    crashed = backend.server_pid
    assert crashed is not None
    os.kill(crashed, signal.SIGKILL)

    failed = await pending
    after = await send(daemon, "What was the secret word?", context_id="ctx-c", message_id="m-3")

    assert failed["status"]["state"] == "TASK_STATE_FAILED", failed
    assert "OpenCode server stopped during this turn" in status_text(failed)
    assert after["status"]["state"] == "TASK_STATE_COMPLETED", after
    assert answer(after) == "The secret word was PLUM."
    assert backend.server_pid not in (None, crashed)


async def test_mcp_servers_reach_opencode_as_tools(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    server = {
        "type": "stdio",
        "command": sys.executable,
        "args": [str(Path(__file__).with_name("mcp_upper.py"))],
        "env": {"MCP_MARK": "UPPER"},
    }
    mock.reply(ToolCallReply("upper_shout", {"text": "hi there"}), when="shout it")
    client = await start_daemon(opencode_settings(opencode={"mcpServers": {"upper": server}}))

    task = await send(client, "Please shout it.")

    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    assert answer(task) == "TOOL RESULT SEEN: UPPER:HI THERE"
    assert "upper_shout" in mock.matching("shout it")[0].tool_names


async def test_file_and_data_parts_reach_the_model(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    client = await start_daemon(opencode_settings())
    message = {
        "messageId": "m-1",
        "role": "ROLE_USER",
        "parts": [
            {"text": "Read the attachment."},
            {
                "raw": base64.b64encode(b"The attachment says BERRY.").decode(),
                "mediaType": "text/plain",
                "filename": "notes.txt",
            },
            {"data": {"ticket": "T-42"}},
        ],
    }
    body = await call(client, "SendMessage", {"message": message})

    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", body
    request = await mock.wait_for_request(lambda r: "Read the attachment." in r.transcript)
    assert "The attachment says BERRY." in request.transcript
    assert '"ticket": "T-42"' in request.transcript
