"""Claude Code's approval quirks (every backend's approval cases are in
tests/contract/test_approvals.py): in policy mode a command outside `allowedTools` is denied to
the agent without a question. Real app, real CLI, mock model."""

from __future__ import annotations

from typing import Any

from harness.mock_models.anthropic import AnthropicMock
from harness.mock_models.steps import Shell
from tests.backends.claude.conftest import (
    COMPLETED,
    ClaudeEnv,
    StartDaemon,
    send,
)

# Not read-only and not a file edit: acceptEdits leaves it to the permission callback.
COMMAND = "python3 -c \"open('ran.txt', 'w').write('ran')\" && echo ran-it"


def tool_result(mock: AnthropicMock) -> dict[str, Any]:
    """The tool result in the model request after the tool call."""
    request = mock.model_requests[1]
    block: dict[str, Any] = request.messages[-1]["content"][0]
    assert block["type"] == "tool_result"
    return block


async def test_policy_mode_asks_nothing_and_the_command_is_denied(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.turns.add([Shell(COMMAND)])
    client = await start_daemon()

    task = await send(client, "Please run it.", "ctx-policy")

    assert task["status"]["state"] == COMPLETED
    assert tool_result(mock)["is_error"] is True
    assert not (claude_env.workdir / "ran.txt").exists()
