"""What a caller sees of a Claude Code turn: streamed text as artifact chunks, tool calls and file
changes as progress. Real app, real CLI, the project's mock model."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from harness.mock_models.anthropic import AnthropicMock, Reply, ToolUse
from harness.mock_models.steps import Say, WriteFile
from tests.backends.claude.conftest import (
    COMPLETED,
    ClaudeEnv,
    StartDaemon,
    send,
    stream,
)
from tests.support.wire import call, user_message

MODEL_TEXT = (
    "Streaming works: every delta of this reply reaches the caller once, in order, "
    "as a chunk of one artifact; nothing is repeated at the end."
)


def progress_notes(events: list[dict[str, Any]]) -> list[str]:
    return [
        e["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        for e in events
        if "statusUpdate" in e
        and e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
        and "message" in e["statusUpdate"]["status"]
    ]


async def test_a_tool_using_turn_shows_the_tool_call_as_progress_and_completes(
    start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    command = ToolUse("Bash", {"command": "echo hello-from-tool", "description": "say hello"})
    mock.on("use a tool", Reply(text="Running a command.", tool_use=command))
    client = await start_daemon()

    events = await stream(client, "Please use a tool.", "ctx-tool")

    assert "Running `echo hello-from-tool`" in progress_notes(events)
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == COMPLETED
    text = final["message"]["parts"][0]["text"]
    assert text == "Running a command.\n\nMOCK saw tool result: hello-from-tool"
    tool_result = (await mock.wait_for_request(2)).messages[-1]["content"][0]
    assert tool_result["type"] == "tool_result"
    assert "hello-from-tool" in str(tool_result["content"])


async def test_a_file_the_agent_writes_is_reported_as_a_file_change(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    target = claude_env.workdir / "notes.txt"
    mock.turns.add([WriteFile(str(target), "written by the agent\n")])
    client = await start_daemon()

    events = await stream(client, "Please write a file.", "ctx-file")

    assert f"Created {target}" in progress_notes(events)
    assert events[-1]["statusUpdate"]["status"]["state"] == COMPLETED
    assert target.read_text() == "written by the agent\n"


async def test_an_attached_text_file_reaches_the_model(
    start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    client = await start_daemon()
    message = user_message("Summarise the attachment.", contextId="ctx-a", messageId="m-a")
    message["parts"].append(
        {"raw": "aGVsbG8gZnJvbSBhIGZpbGU=", "filename": "a.txt", "mediaType": "text/plain"}
    )

    body = await call(client, "SendMessage", {"message": message})

    assert body["result"]["task"]["status"]["state"] == COMPLETED
    seen = (await mock.wait_for_request(1)).texts("user")
    assert "Attached file a.txt (text/plain):\nhello from a file" in seen


async def test_the_default_output_mode_sends_one_final_artifact(
    start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.turns.add([Say(MODEL_TEXT)])  # streamed in small chunks
    client = await start_daemon()

    task = await send(client, "stream please", "ctx-final")

    (artifact,) = task["artifacts"]
    assert artifact["parts"] == [{"text": MODEL_TEXT}]


async def test_an_mcp_server_from_the_config_serves_a_tool_call(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    server = Path(__file__).with_name("mcp_calc.py")
    mcp = {"calc": {"type": "stdio", "command": sys.executable, "args": [str(server)]}}
    mock.on("add numbers", Reply(tool_use=ToolUse("mcp__calc__add", {"a": 2, "b": 40})))
    client = await start_daemon(
        claude_env.settings(claude={"mcpServers": mcp, "allowedTools": ["mcp__calc__add"]})
    )

    events = await stream(client, "Please add numbers.", "ctx-mcp")

    assert "Running tool mcp__calc__add" in progress_notes(events)
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == COMPLETED
    assert final["message"]["parts"][0]["text"] == "MOCK saw tool result: sum=42"
