"""No agent process outlives the daemon, with each real CLI (issue 17, item 8): a turn runs a
shell tool (`sleep 1000`) against the CLI's mock model, the daemon is SIGKILLed (or stopped
with one or two SIGTERMs), and after the next start nothing of the previous instance runs.
Real daemon process, real CLIs, mock models. Each case prints how many processes of the
instance were running, were left after the kill, and are left after the restart."""

from __future__ import annotations

import contextlib
import json
import signal
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx
import pytest

from core.backend import procfs
from harness.codex import codex_block
from harness.mock_models import openai_responses
from harness.mock_models.anthropic import AnthropicMock, ToolUse
from harness.mock_models.anthropic import Reply as AnthropicReply
from harness.mock_models.gemini import GeminiMock
from harness.mock_models.openai_chat import MODEL as CHAT_MODEL
from harness.mock_models.openai_chat import OpenAIChatMock
from harness.mock_models.steps import Shell
from harness.opencode import TEST_ENV, provider_config
from tests.backends.acp import support as acp_support
from tests.backends.copilot.conftest import API_KEY as COPILOT_KEY
from tests.backends.copilot.conftest import BUNDLED_CLI as COPILOT_CLI
from tests.support.daemon import Daemon, Daemons
from tests.support.orphans import (
    await_instance_gone,
    await_logged,
    cmdline,
    logged,
    of_instance,
    still_running,
)
from wrappers.claude import options as claude_options
from wrappers.opencode.launch import find_binary

# Claude Code refuses a command that starts with a long sleep.
SLEEP = "echo waiting && sleep 1000"
PROMPT = "run the long command"
CLAUDE_KEY = "sk-ant-e2e-test-key"

Rig = Callable[[Path], contextlib.AbstractAsyncContextManager[dict[str, Any]]]


@contextlib.asynccontextmanager
async def claude(root: Path) -> AsyncIterator[dict[str, Any]]:
    binary = claude_options.bundled_cli()
    assert binary is not None, "claude-agent-sdk with its bundled CLI is not installed"
    async with AnthropicMock(api_key=CLAUDE_KEY) as mock:
        mock.on(
            PROMPT,
            AnthropicReply(
                text="Running it.",
                tool_use=ToolUse("Bash", {"command": SLEEP, "description": "wait"}),
            ),
        )
        yield {
            "backend": "claude",
            "claude": {
                "workingDirectory": str(root / "work"),
                "home": str(root / "claude-home"),
                "model": "claude-sonnet-4-5",
                "allowedTools": ["Bash"],
                "env": {
                    # Login shells of the Bash tool must not read the machine's profile.
                    "HOME": str(root / "home"),
                    "ANTHROPIC_BASE_URL": mock.url,
                    "ANTHROPIC_API_KEY": CLAUDE_KEY,
                    "CLAUDE_CODE_MAX_RETRIES": "0",
                },
            },
        }


@contextlib.asynccontextmanager
async def codex(root: Path) -> AsyncIterator[dict[str, Any]]:
    async with openai_responses.ResponsesMock.running() as mock:
        mock.script(openai_responses.Reply.shell(SLEEP))
        yield {"backend": "codex", "codex": codex_block(mock.base_url, root / "codex")}


@contextlib.asynccontextmanager
async def opencode(root: Path) -> AsyncIterator[dict[str, Any]]:
    async with OpenAIChatMock() as mock:
        yield {
            "backend": "opencode",
            "opencode": {
                "workingDirectory": str(root / "work"),
                "home": str(root / "opencode-home"),
                "cliPath": str(find_binary(None)),
                "model": "mock/mock-model",
                "env": TEST_ENV,
                "config": provider_config(mock.base_url),
            },
        }


@contextlib.asynccontextmanager
async def copilot(root: Path) -> AsyncIterator[dict[str, Any]]:
    assert COPILOT_CLI.is_file(), f"the copilot CLI is not at {COPILOT_CLI}: run `make test`"
    async with OpenAIChatMock(api_key=COPILOT_KEY) as mock:
        yield {
            "backend": "copilot",
            "copilot": {
                "workingDirectory": str(root / "work"),
                "cliPath": str(COPILOT_CLI),
                "home": str(root / "copilot-home"),
                "model": CHAT_MODEL,
                "offline": True,
                "provider": {"baseUrl": mock.base_url, "apiKey": COPILOT_KEY},
                "env": {"HOME": str(root / "home"), "XDG_CACHE_HOME": str(root / "cache")},
            },
        }


@contextlib.asynccontextmanager
async def gemini(root: Path) -> AsyncIterator[dict[str, Any]]:
    """Gemini CLI through the `acp` backend's preset (an ACP agent the daemon spawns)."""
    async with GeminiMock(api_key=acp_support.GEMINI_KEY) as mock:
        mock.turns.add([Shell(SLEEP)])
        block = acp_support.gemini_block(mock.url, root, root / "work", root / "home")
        yield {"backend": "gemini", "gemini": {**block, "approveKinds": ["execute"]}}


# The chat mocks call the tool the prompt names (`MOCK_TOOL <name> {json}`).
CHAT_PROMPT = f"MOCK_TOOL bash {json.dumps({'command': SLEEP, 'description': 'wait'})}"
RIGS: dict[str, tuple[Rig, str]] = {
    "claude": (claude, PROMPT),
    "codex": (codex, PROMPT),
    "opencode": (opencode, CHAT_PROMPT),
    "copilot": (copilot, CHAT_PROMPT),
    "gemini": (gemini, PROMPT),
}


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[Daemons]:
    made = Daemons(tmp_path)
    yield made
    made.close()


def running_tool(daemon: Daemon, prompt: str) -> list[procfs.ProcessInfo]:
    """Send `prompt`, wait until the agent runs `sleep 1000`: the instance's processes then
    (what runs below the daemon, and what carries its instance marker)."""
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": prompt}]}
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": message, "configuration": {"returnImmediately": True}},
    }
    response = httpx.post(
        f"{daemon.url}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}, timeout=30
    )
    assert "result" in response.json(), response.text
    deadline = time.monotonic() + 60
    while not any(cmdline(p.pid)[-2:] == ["sleep", "1000"] for p in of(daemon)):
        assert time.monotonic() < deadline, "the agent never ran its shell tool"
        time.sleep(0.1)
    return of(daemon)


def instance_of(daemon: Daemon) -> str:
    """The instance id the daemon logged at its (first) start."""
    started = logged(daemon, "daemon.instance")
    return str(started[0]["instance"]) if started else "unknown"


def of(daemon: Daemon) -> list[procfs.ProcessInfo]:
    return of_instance(daemon.pid, instance_of(daemon))


def at_work(
    root: Path,
    daemons: Daemons,
    config: dict[str, Any],
    prompt: str,
    sandbox: str = "none",
    **server: Any,
) -> tuple[Daemon, list[procfs.ProcessInfo]]:
    """A daemon serving `config` (its agents in `sandbox.mode` `sandbox`), its agent running
    the shell tool; and its processes."""
    for folder in ("work", "home", "cache"):
        (root / folder).mkdir(exist_ok=True)
    storage = {"path": str(root / "tasks.sqlite3")}
    server = {"shutdownTimeout": 500, **server}
    sandboxed = {"sandbox": {"mode": sandbox}}
    daemon = daemons({**config, "storage": storage, "server": server, **sandboxed})
    daemon.start()
    running = running_tool(daemon, prompt)
    if sandbox == "bubblewrap":
        names = {Path(cmdline(p.pid)[0]).name for p in running if cmdline(p.pid)}
        assert "bwrap" in names, names
    return daemon, running


@pytest.mark.parametrize("sandbox", ["none", "bubblewrap"])
@pytest.mark.parametrize("backend", list(RIGS))
async def test_after_a_sigkill_the_next_start_stops_every_agent_process(
    backend: str,
    sandbox: str,
    tmp_path: Path,
    daemons: Daemons,
    leftovers: list[procfs.ProcessInfo],
) -> None:
    rig, prompt = RIGS[backend]
    async with rig(tmp_path) as config:

        def scenario() -> tuple[list[str], int, int]:
            daemon, running = at_work(tmp_path, daemons, config, prompt, sandbox)
            leftovers.extend(running)
            names = [Path(cmdline(p.pid)[0]).name for p in running if cmdline(p.pid)]
            daemon.kill()
            # Reported, not asserted: how much of it is still running when the next start
            # begins (at once). Parent-death signals, and CLIs that stop their tools when
            # their stdin closes, race with it.
            left = still_running(running)
            daemon.start()
            try:
                await_instance_gone(running, instance_of(daemon))
            finally:
                daemon.stop()
            stopped = logged(daemon, "daemon.leftovers_stopped")
            return names, len(left), stopped[0]["count"] if stopped else 0

        names, left, stopped = await anyio.to_thread.run_sync(scenario)
    print(
        f"\n{backend} (sandbox {sandbox}): {len(names)} processes ({' '.join(names)}), "
        f"{left} left after SIGKILL, "
        f"{stopped} stopped by the next start, 0 left after it"
    )


@pytest.mark.parametrize("sandbox", ["none", "bubblewrap"])
@pytest.mark.parametrize("signals", [1, 2], ids=["sigterm", "double-sigterm"])
@pytest.mark.parametrize("backend", ["claude", "opencode"])
async def test_sigterm_leaves_no_agent_process(
    backend: str,
    signals: int,
    sandbox: str,
    tmp_path: Path,
    daemons: Daemons,
    leftovers: list[procfs.ProcessInfo],
) -> None:
    """One CLI the SDK starts (no parent-death signal), one the wrapper starts."""
    rig, prompt = RIGS[backend]
    async with rig(tmp_path) as config:

        def scenario() -> int:
            grace = 500 if signals == 1 else 60_000
            daemon, running = at_work(
                tmp_path, daemons, config, prompt, sandbox, shutdownTimeout=grace
            )
            leftovers.extend(running)
            if signals == 2:
                assert daemon.proc is not None
                daemon.proc.send_signal(signal.SIGTERM)
                await_logged(daemon, "daemon.stopping")
            assert daemon.stop(signal.SIGTERM) == (0 if signals == 1 else 130)
            await_instance_gone(running, instance_of(daemon))
            return len(running)

        running = await anyio.to_thread.run_sync(scenario)
    print(
        f"\n{backend} (sandbox {sandbox}), {signals} SIGTERM: {running} processes of the "
        "instance, 0 left"
    )
