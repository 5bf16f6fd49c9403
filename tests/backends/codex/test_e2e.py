"""End to end: the daemon's HTTP app (`create_app`, JSON-RPC v1.0) serving the real codex
binary against the mock model on 127.0.0.1, Codex's state isolated per test.

These are the proofs the Codex issue asks for: a conversation per contextId, surviving a daemon
restart; streamed text; tool calls as progress; cancel; model errors; a stalled model; session
ttl; usage in the task metadata.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from core.cli import main as cli_main
from harness.mock_models.openai_responses import Reply, ResponsesMock
from harness.mock_models.steps import Shell, Upstream
from tests.backends.codex.conftest import Client, MakeCodexClient
from tests.backends.codex.support import codex_settings
from tests.support.errors import SECRET, error_id
from tests.support.wire import V1, call, rpc, sse_events, user_message
from wrappers.codex.config import CodexConfig

COMPLETED = "TASK_STATE_COMPLETED"
MCP_CALC = str(Path(__file__).resolve().parents[2] / "support" / "mcp_calc.py")


class Messages:
    """Unique message ids for one test."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, text: str, context: str, **extra: Any) -> dict[str, Any]:
        self.count += 1
        return user_message(text, contextId=context, messageId=f"m-{self.count}", **extra)


message = Messages()


async def send(client: Client, text: str, context: str = "ctx-1", **config: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": message(text, context)}
    if config:
        params["configuration"] = config
    body = await call(client, "SendMessage", params)
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def stream(client: Client, text: str, context: str = "ctx-1") -> list[dict[str, Any]]:
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": message(text, context)}),
    )
    return [data["result"] for _, data in await sse_events(response)]


def status_text(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


def wrapper(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return section


async def test_a_tool_turn_shows_the_call_as_progress_and_completes(
    make_codex_client: MakeCodexClient, mock: ResponsesMock
) -> None:
    client = await make_codex_client()
    mock.turns.add([Shell("echo hello-from-tool")])

    events = await stream(client, "Run the tool.")

    notes = [
        e["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        for e in events
        if "statusUpdate" in e and "message" in e["statusUpdate"]["status"]
    ]
    assert any(n.startswith("Running `") and "hello-from-tool" in n for n in notes), notes
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == COMPLETED
    assert "hello-from-tool" in final["message"]["parts"][0]["text"]
    assert mock.requests[-1].ends_with_tool_output


@pytest.mark.parametrize(
    ("status", "expected", "ends"),
    [
        (500, "The model endpoint failed", "TASK_STATE_FAILED"),
        (401, "The model endpoint refused the credentials (HTTP 401)", "TASK_STATE_AUTH_REQUIRED"),
    ],
)
async def test_a_model_endpoint_error_fails_the_task_with_a_clear_message(
    make_codex_client: MakeCodexClient, mock: ResponsesMock, status: int, expected: str, ends: str
) -> None:
    client = await make_codex_client(timeouts={"turn": 30_000, "idle": 20_000})
    mock.turns.add([Upstream(status, f"scripted: {SECRET}")])

    started = time.monotonic()
    task = await send(client, "This will fail.")

    assert task["status"]["state"] == ends
    assert status_text(task).startswith(expected)
    assert "Traceback" not in status_text(task)
    assert SECRET not in status_text(task)
    error_id(status_text(task))
    assert time.monotonic() - started < 20
    assert len(mock.requests) == 1
    # The context survives the error.
    assert (await send(client, "Again?"))["status"]["state"] == COMPLETED


async def test_an_expired_session_starts_fresh(
    make_codex_client: MakeCodexClient, mock: ResponsesMock
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    client = await make_codex_client(session={"ttl": 60_000}, clock=lambda: now[0])
    first = await send(client, "Remember the word PAPAYA.")

    now[0] += timedelta(minutes=2)
    second = await send(client, "Which word did I ask you to remember?")

    assert wrapper(second)["expiredSession"] is True
    assert wrapper(second)["newSession"] is True
    assert wrapper(second)["sessionId"] != wrapper(first)["sessionId"]
    assert mock.requests[-1].texts("user") == ["Which word did I ask you to remember?"]
    assert mock.requests[-1].texts("assistant") == []


async def test_usage_per_turn_lands_in_the_task_metadata(
    make_codex_client: MakeCodexClient, mock: ResponsesMock
) -> None:
    client = await make_codex_client()

    first = await send(client, "hello")
    mock.turns.add([Shell("true")])
    second = await send(client, "run something")  # two model requests
    third = await send(client, "and again")

    assert wrapper(first)["usage"] == {
        "inputTokens": 100,
        "outputTokens": 10,
        "cacheReadTokens": 0,
        "cacheCreationTokens": 0,
        "costUsd": None,
        "model": "gpt-5.5",
    }
    assert wrapper(second)["usage"]["inputTokens"] == 200
    assert wrapper(second)["usage"]["outputTokens"] == 20
    # Codex reports the thread's running total; the task gets this turn's share.
    assert wrapper(third)["usage"]["inputTokens"] == 100


def test_check_reports_the_binary_working_directory_and_credentials(
    mock: ResponsesMock, codex_root: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    settings = codex_settings(mock, codex_root)
    config = tmp_path / "codex.json"
    config.write_text(
        json.dumps(
            {
                "backend": "codex",
                "codex": settings.block(CodexConfig).model_dump(
                    mode="json", by_alias=True, exclude_none=True
                ),
            }
        )
    )

    code = cli_main(["check", str(config)])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok   codex binary: codex-cli 0.163.0" in out
    assert f"ok   working directory: {codex_root / 'work'}" in out
    assert "ok   git repository: none; allowed by codex.skipGitRepoCheck" in out
    assert "ok   credentials: MOCK_API_KEY is set" in out
    assert "mock-key" not in out


async def test_an_mcp_server_from_the_shared_key_is_usable_by_codex(
    make_codex_client: MakeCodexClient, mock: ResponsesMock
) -> None:
    calc = {"type": "stdio", "command": sys.executable, "args": [MCP_CALC]}
    client = await make_codex_client(codex={"mcpServers": {"calc": calc}})
    mock.script(
        Reply.tool_search("calc add"),
        Reply.function_call("add", {"a": 2, "b": 40}, namespace="mcp__calc"),
    )

    events = await stream(client, "Add 2 and 40 with the calculator.")

    notes = [
        e["statusUpdate"]["status"]["message"]["parts"][0]["text"]
        for e in events
        if "statusUpdate" in e and "message" in e["statusUpdate"]["status"]
    ]
    assert "Running tool calc.add" in notes
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == COMPLETED
    assert "sum=42" in final["message"]["parts"][0]["text"]
