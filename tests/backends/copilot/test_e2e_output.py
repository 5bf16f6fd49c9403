"""E2E, what a turn shows: streamed text, tool calls as progress, the permission policy, and
model endpoint errors as clear failures."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
from structlog.testing import capture_logs

from harness.mock_models.openai_chat import OpenAIChatMock
from harness.mock_models.steps import Upstream
from tests.backends.copilot.a2a import (
    answer,
    send,
    state,
    status_text,
    stream,
)
from tests.backends.copilot.conftest import AppFactory, SettingsFactory
from tests.support.errors import SECRET, assert_logged_safely


def tool_prompt(name: str, **arguments: Any) -> str:
    return f"MOCK_TOOL {name} {json.dumps(arguments)}"


def progress_notes(events: list[dict[str, Any]]) -> list[str]:
    notes = []
    for event in events:
        status = event.get("statusUpdate", {}).get("status", {})
        if status.get("state") == "TASK_STATE_WORKING" and "message" in status:
            notes.append("".join(p.get("text", "") for p in status["message"]["parts"]))
    return notes


async def test_a_tool_call_shows_as_progress_and_the_turn_completes(
    copilot_app: AppFactory, project: Path
) -> None:
    client = await copilot_app()
    command = "echo hello > made.txt"

    events = await stream(client, tool_prompt("bash", command=command, description="write"))

    assert f"Running `{command}`" in progress_notes(events)
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED"
    assert "TOOL RESULT SEEN" in "".join(p["text"] for p in final["message"]["parts"])
    assert (project / "made.txt").read_text() == "hello\n"


async def test_the_policy_refuses_a_write_outside_the_working_directory(
    copilot_app: AppFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app()
    outside = tmp_path / "outside.txt"

    task = await send(client, tool_prompt("create", path=str(outside), file_text="no\n"))

    assert state(task) == "TASK_STATE_COMPLETED", task
    assert not outside.exists()
    # What the model was told about its refused tool call:
    tool_result = mock.requests[-1].texts("tool")[-1]
    assert "The a2a-wrapper permission policy refused this" in tool_result
    assert f"writing {outside} is outside the working directory" in tool_result


async def test_a_file_edit_inside_the_working_directory_is_approved(
    copilot_app: AppFactory, project: Path
) -> None:
    client = await copilot_app()
    target = project / "notes.txt"

    events = await stream(client, tool_prompt("create", path=str(target), file_text="yes\n"))

    assert target.read_text() == "yes\n"
    assert f"Created {target}" in progress_notes(events)


async def test_a_model_endpoint_500_fails_the_task_after_the_cli_retries(
    copilot_app: AppFactory, mock: OpenAIChatMock
) -> None:
    # retry-after 0: Copilot still retries 5 times, one second apart instead of backing off.
    mock.turns.add([Upstream(500, f"upstream exploded: {SECRET}")])  # retry-after 0
    client = await copilot_app()

    with anyio.fail_after(30), capture_logs() as logs:
        task = await send(client, "boom")

    assert state(task) == "TASK_STATE_FAILED", task
    assert status_text(task).startswith("The model endpoint failed (HTTP 500).")
    # The endpoint's body, and Copilot's words about its retries, are in the log only.
    entry = assert_logged_safely(status_text(task), logs)
    assert "retried 5 times" in entry["detail"]
    assert len(mock.matching("boom")) == 6


async def test_a_rejected_api_key_fails_the_task_and_says_which_key(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock
) -> None:
    settings = copilot_settings(
        copilot={"provider": {"baseUrl": mock.base_url, "apiKey": "wrong-key"}}
    )
    client = await copilot_app(settings)

    with anyio.fail_after(30):
        task = await send(client, "hello")

    assert state(task) == "TASK_STATE_AUTH_REQUIRED", task
    text = status_text(task)
    assert "rejected the credentials (HTTP 401)" in text
    assert "copilot.provider.apiKey" in text
    assert "wrong-key" not in text


def echo_server() -> dict[str, Any]:
    script = Path(__file__).with_name("mcp_echo.py")
    return {"echo": {"type": "stdio", "command": sys.executable, "args": [str(script)]}}


async def test_an_allowed_mcp_tool_from_the_config_is_called(
    copilot_app: AppFactory, copilot_settings: SettingsFactory
) -> None:
    settings = copilot_settings(copilot={"mcpServers": echo_server(), "allowTools": ["echo"]})
    client = await copilot_app(settings)

    task = await send(client, tool_prompt("echo-echo_upper", text="hi"))

    assert state(task) == "TASK_STATE_COMPLETED", task
    assert answer(task) == "TOOL RESULT SEEN: ECHO:HI"


async def test_mcp_tools_are_refused_unless_allowed(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock
) -> None:
    client = await copilot_app(copilot_settings(copilot={"mcpServers": echo_server()}))

    task = await send(client, tool_prompt("echo-echo_upper", text="hi"))

    assert state(task) == "TASK_STATE_COMPLETED", task
    tool_result = mock.requests[-1].texts("tool")[-1]
    assert "refused this: the MCP tool echo(echo_upper) is not allowed by default" in tool_result


async def test_without_any_credentials_the_task_says_how_to_log_in(
    copilot_app: AppFactory, copilot_settings: SettingsFactory
) -> None:
    # GitHub mode (no provider), no token anywhere, a fresh HOME and COPILOT_HOME.
    settings = copilot_settings(copilot={"provider": None, "offline": False, "model": None})
    client = await copilot_app(settings)

    with anyio.fail_after(30):
        task = await send(client, "hello")

    assert state(task) == "TASK_STATE_AUTH_REQUIRED", task
    text = status_text(task)
    assert text.startswith("No GitHub credentials for Copilot: set copilot.githubToken")
    assert "`copilot login`" in text
