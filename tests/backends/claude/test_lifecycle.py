"""The backend's own lifecycle with the real CLI: warm processes retired when idle or beyond
`maxWarm`, an agent that ignores its interrupt killed, shutdown, start refusals, `check`."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import anyio
import pytest
from aiohttp.test_utils import TestServer

from core.backend.base import BackendUnavailableError, running
from core.cli import main
from core.daemon import create_app
from core.engine.startup import BackendStartError
from harness.mock_models.anthropic import AnthropicMock
from harness.mock_models.steps import Hang
from tests.backends.claude.conftest import (
    API_KEY,
    CANCELED,
    COMPLETED,
    FAILED,
    AiohttpClient,
    ClaudeEnv,
    StartDaemon,
    answer,
    claude_processes,
    send,
    wait_exited,
    wrapper,
)
from tests.support.wire import call
from wrappers.claude import create
from wrappers.claude.backend import ClaudeBackend
from wrappers.claude.config import ClaudeConfig


async def test_an_idle_warm_process_is_stopped_and_the_next_turn_resumes_its_session(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    client = await start_daemon(claude_env.settings(claude={"warmIdle": 1000}))
    first = await send(client, "Remember the word PAPAYA.", "ctx-w")
    (pid,) = claude_processes()

    await wait_exited(pid)
    second = await send(client, "Which word was it?", "ctx-w")

    assert second["status"]["state"] == COMPLETED
    assert (await mock.wait_for_request(2)).texts("assistant") == [answer(first)]
    assert wrapper(second)["sessionId"] == wrapper(first)["sessionId"]
    assert pid not in claude_processes()


async def test_beyond_max_warm_the_least_recently_used_process_is_stopped(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    client = await start_daemon(claude_env.settings(claude={"maxWarm": 1}))
    first_a = await send(client, "Remember the word PAPAYA.", "ctx-a")
    (pid_a,) = claude_processes()

    await send(client, "Remember the word MANGO.", "ctx-b")
    await wait_exited(pid_a)
    (pid_b,) = claude_processes()
    again_a = await send(client, "Which word was it?", "ctx-a")

    assert again_a["status"]["state"] == COMPLETED
    assert (await mock.wait_for_request(3)).texts("assistant") == [answer(first_a)]
    await wait_exited(pid_b)
    assert len(claude_processes()) == 1


async def test_an_agent_that_ignores_its_interrupt_is_killed_and_the_task_canceled(
    claude_env: ClaudeEnv, aiohttp_client: AiohttpClient, mock: AnthropicMock
) -> None:
    settings = claude_env.settings()
    backend = ClaudeBackend(settings.block(ClaudeConfig), interrupt_grace=0.5, stop_grace=0.5)
    client = await aiohttp_client(create_app(settings, backend=backend))
    first = await send(client, "Remember the word PAPAYA.", "ctx-k")
    mock.turns.add([Hang()])
    (pid,) = claude_processes()
    task = await send(client, "stall now", "ctx-k", returnImmediately=True)
    await mock.wait_for_request(2)
    os.kill(pid, signal.SIGSTOP)  # a wedged agent: it can neither answer nor exit by itself

    started = time.monotonic()
    canceled = (await call(client, "CancelTask", {"id": task["id"]}))["result"]

    assert canceled["status"]["state"] == CANCELED
    assert time.monotonic() - started < 0.5 + 0.5 + 2
    await wait_exited(pid)
    after = await send(client, "Which word was it?", "ctx-k")
    assert after["status"]["state"] == COMPLETED
    # Resuming a session cut mid-turn, the CLI closes the dangling turn itself.
    assert (await mock.wait_for_request(3)).texts("assistant")[0] == answer(first)


async def test_shutdown_stops_a_running_turn_and_every_process(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    # A running turn gets server.shutdownTimeout to finish before it is stopped.
    client = await start_daemon(claude_env.settings(server={"shutdownTimeout": 500}))
    await send(client, "Hello.", "ctx-idle")
    mock.turns.add([Hang()])
    task = await send(client, "stall now", "ctx-busy", returnImmediately=True)
    stalled = await mock.wait_for_request(2)
    assert len(claude_processes()) == 2

    await client.close()

    assert claude_processes() == []
    with anyio.fail_after(5):
        await stalled.disconnected.wait()
    restarted = await start_daemon()
    stored = (await call(restarted, "GetTask", {"id": task["id"]}))["result"]
    assert stored["status"]["state"] == FAILED
    assert "shut down while this task was running" in answer(stored)


async def test_the_daemon_refuses_to_start_without_its_working_directory(
    claude_env: ClaudeEnv,
) -> None:
    settings = claude_env.settings(claude={"workingDirectory": str(claude_env.root / "gone")})
    server = TestServer(create_app(settings))
    try:
        # The daemon reports it as a start-up failure (one line, exit 4) caused by the backend.
        with pytest.raises(
            BackendStartError, match=r"claude\.workingDirectory .*/gone does not"
        ) as refused:
            await server.start_server()
        assert isinstance(refused.value.__cause__, BackendUnavailableError)
    finally:
        await server.close()


async def test_start_refuses_a_binary_that_is_not_there(claude_env: ClaudeEnv) -> None:
    settings = claude_env.settings(claude={"cliPath": str(claude_env.root / "no-claude")})
    with pytest.raises(
        BackendUnavailableError,
        match=r"Claude Code binary was not found: claude\.cliPath .* is not an executable",
    ):
        await create(settings.block(ClaudeConfig)).start()


async def test_bypass_permissions_as_root_needs_a_sandbox(
    claude_env: ClaudeEnv, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.delenv("IS_SANDBOX", raising=False)
    dangerous = {"permissionMode": "bypassPermissions", "dangerouslyAllowBypassPermissions": True}
    with pytest.raises(BackendUnavailableError, match=r'set "IS_SANDBOX": "1" in claude\.env'):
        await create(claude_env.settings(claude=dangerous).block(ClaudeConfig)).start()

    sandboxed = {**dangerous, "env": {"IS_SANDBOX": "1"}}
    backend = create(claude_env.settings(claude=sandboxed).block(ClaudeConfig))
    async with running(backend):  # start, serve in a task group, then aclose: as the engine
        assert (await backend.health()).ok
    assert not (await backend.health()).ok


async def test_diagnose_needs_no_start(claude_env: ClaudeEnv) -> None:
    backend = create(claude_env.settings().block(ClaudeConfig))

    checks = {d.name: d for d in await backend.diagnose()}

    assert not (await backend.health()).ok
    assert checks["claude binary"].ok
    assert checks["claude binary"].detail.endswith("(2.1.332 (Claude Code))")
    assert "working directory" not in checks, "the core checks it, for every backend"
    assert checks["credentials"].ok
    assert API_KEY not in checks["credentials"].detail


def test_check_reports_binary_workdir_credentials_and_card(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("E2E_SECRET_KEY", "sk-ant-do-not-print")
    path = tmp_path / "claude.json"
    path.write_text(
        json.dumps(
            {
                "backend": "claude",
                "claude": {
                    "workingDirectory": str(tmp_path),
                    "home": str(tmp_path / "state"),
                    "env": {"ANTHROPIC_API_KEY": "${E2E_SECRET_KEY}"},
                },
            }
        )
    )

    code = main(["check", str(path)])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "ok   claude binary: " in out
    assert "(2.1.332 (Claude Code))" in out
    assert f"ok   working directory: {tmp_path}" in out
    assert "ok   credentials: ANTHROPIC_API_KEY is set" in out
    assert '"name": "a2a-wrapper"' in out
    assert "sk-ant-do-not-print" not in out


def test_check_fails_without_credentials(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    path = tmp_path / "claude.json"
    config = {"workingDirectory": str(tmp_path), "home": str(tmp_path / "state")}
    path.write_text(json.dumps({"backend": "claude", "claude": config}))

    assert main(["check", str(path)]) == 1
    assert "FAIL credentials: none found: set ANTHROPIC_API_KEY" in capsys.readouterr().out
