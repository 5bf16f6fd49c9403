"""End-to-end fixtures: the real daemon app with the real Claude Code CLI (the binary bundled in
claude-agent-sdk) against the project's Anthropic mock on 127.0.0.1, all state in tmp_path."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiohttp.test_utils import TestClient

from core.backend import process as kit_process
from core.daemon import create_app
from core.settings import Settings, load
from harness.mock_models.anthropic import AnthropicMock
from tests.support.wire import V1, call, rpc, sse_events, user_message
from wrappers.claude import options, process

Client = TestClient[Any, Any]
AiohttpClient = Callable[..., Awaitable[Client]]
StartDaemon = Callable[..., Awaitable[Client]]

MODEL = "claude-sonnet-4-5"
API_KEY = "sk-ant-e2e-test-key"
COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"
CANCELED = "TASK_STATE_CANCELED"
EXIT_TIMEOUT = 15.0


def claude_binary() -> Path:
    """The bundled CLI. Missing means the `claude` extra is not installed: fail, never skip."""
    binary = options.bundled_cli()
    assert binary is not None, "claude-agent-sdk with its bundled CLI is not installed"
    return binary.resolve()


def claude_processes() -> list[int]:
    """Live Claude Code processes started by this test process."""
    binary = claude_binary()
    found = []
    for pid in process.children():
        try:
            if Path(os.readlink(f"/proc/{pid}/exe")) == binary:
                found.append(pid)
        except OSError:
            continue
    return found


async def wait_exited(pid: int) -> None:
    """Wait until `pid` has exited (the kit's pidfd wait, no polling); bounded."""
    with anyio.fail_after(EXIT_TIMEOUT):
        await kit_process.wait_exited([pid])


class FakeClock:
    """What session expiry reads, advanced by the test instead of waiting."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@dataclass
class ClaudeEnv:
    mock: AnthropicMock
    root: Path

    @property
    def workdir(self) -> Path:
        return self.root / "work"

    @property
    def home(self) -> Path:
        return self.root / "claude-home"

    def settings(self, *, credentials: bool = True, **sections: Any) -> Settings:
        """A daemon config for the real CLI against the mock; `sections` merge over it."""
        base: dict[str, Any] = {
            "backend": "claude",
            "storage": {"kind": "sqlite", "path": str(self.root / "daemon.sqlite3")},
            "agentCard": {"name": "Claude e2e", "description": "Claude Code against a mock"},
            "claude": {
                "workingDirectory": str(self.workdir),
                "home": str(self.home),
                "model": MODEL,
                "env": {
                    # The Bash tool runs login shells: a HOME of their own keeps the machine's
                    # shell profile (pyenv, which can wait a minute on its lock) out of them.
                    "HOME": str(self.root / "home"),
                    "ANTHROPIC_BASE_URL": self.mock.url,
                    "ANTHROPIC_API_KEY": API_KEY,
                    # One request per failing model call: the tests of errors stay fast.
                    "CLAUDE_CODE_MAX_RETRIES": "0",
                },
            },
        }
        if not credentials:
            del base["claude"]["env"]["ANTHROPIC_API_KEY"]
        return load(None, overrides=_merge(base, sections), environ={})


@pytest.fixture
async def mock() -> AsyncIterator[AnthropicMock]:
    async with AnthropicMock(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def claude_env(mock: AnthropicMock, tmp_path: Path) -> ClaudeEnv:
    claude_binary()
    env = ClaudeEnv(mock, tmp_path)
    env.workdir.mkdir()
    (tmp_path / "home").mkdir()
    return env


@pytest.fixture
def start_daemon(claude_env: ClaudeEnv, aiohttp_client: AiohttpClient) -> StartDaemon:
    """Start the real app (backend built from the settings, as `serve` does)."""

    async def start(settings: Settings | None = None, **app_options: Any) -> Client:
        app = create_app(settings or claude_env.settings(), **app_options)
        return await aiohttp_client(app)

    return start


async def send(client: Client, text: str, context_id: str, **configuration: Any) -> dict[str, Any]:
    """SendMessage (blocking unless `returnImmediately`) on `context_id`; returns the task."""
    message = user_message(text, contextId=context_id, messageId=str(uuid.uuid4()))
    params: dict[str, Any] = {"message": message}
    if configuration:
        params["configuration"] = configuration
    body = await call(client, "SendMessage", params)
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def stream(client: Client, text: str, context_id: str) -> list[dict[str, Any]]:
    """SendStreamingMessage on `context_id`; every event until the stream ends."""
    message = user_message(text, contextId=context_id, messageId=str(uuid.uuid4()))
    response = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SendStreamingMessage", {"message": message})
    )
    return [data["result"] for _, data in await sse_events(response)]


def answer(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


def wrapper(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return section
