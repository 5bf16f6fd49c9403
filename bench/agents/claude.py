"""Turn latency of Claude Code through the daemon, and the same turns without it.

Against the project's Anthropic mock on 127.0.0.1 (no network, no key), with the real CLI
bundled in claude-agent-sdk:

- daemon: the real app on a loopback port, a blocking JSON-RPC SendMessage per turn; the
  first turn of a context starts its Claude Code process, follow-ups reuse the warm one;
- sdk: the same options (`wrappers.claude.sdk_options`) on a `ClaudeSDKClient`
  driven directly: connect + query for a first turn, query on the live client for follow-ups.

Contexts alternate between the two, so a change in the machine's load hits both alike.

The difference is the daemon's overhead, blurred by the CLI's own variation; the daemon's own
time per turn is also measured directly: the HTTP round trip minus the time spent inside the
backend's `run_turn`. A benchmark, not a test: nothing asserts timings.

    .venv/bin/python -m bench.agents.claude --contexts 5 --follow-ups 4
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from claude_agent_sdk import ClaudeSDKClient, ResultMessage

from core.backend import Backend, BackendEvent, Diagnosis, Health, Turn
from core.daemon import create_app
from core.settings import Settings, load
from harness.mock_models.anthropic import AnthropicMock
from wrappers.claude import ClaudeConfig, create, sdk_options

V1 = {"A2A-Version": "1.0"}
KEY = "sk-ant-bench"


def _settings(mock: AnthropicMock, root: Path) -> Settings:
    return load(
        None,
        overrides={
            "backend": "claude",
            "storage": {"kind": "sqlite", "path": str(root / "daemon.sqlite3")},
            "claude": {
                "workingDirectory": str(root),
                "home": str(root / "claude-home"),
                "env": {"ANTHROPIC_BASE_URL": mock.url, "ANTHROPIC_API_KEY": KEY},
            },
        },
        environ={},
    )


async def _send(http: aiohttp.ClientSession, url: str, text: str, context_id: str) -> None:
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "contextId": context_id,
        "parts": [{"text": text}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    async with http.post(url, json=body, headers=V1) as response:
        result: dict[str, Any] = await response.json()
    state = result["result"]["task"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"turn ended {state}")


class Samples:
    def __init__(self) -> None:
        self.first: list[float] = []
        self.follow: list[float] = []


class TimedBackend:
    """The Claude backend, timing each `run_turn` from its call to its last event: what the
    HTTP round trip spends outside of it is the daemon's own time."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.name = backend.name
        self.inside: list[float] = []

    async def start(self) -> None:
        await self._backend.start()

    async def aclose(self) -> None:
        await self._backend.aclose()

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        started = time.perf_counter()
        async for event in self._backend.run_turn(turn):
            yield event
        self.inside.append(time.perf_counter() - started)

    async def interrupt(self, turn: Turn) -> None:
        await self._backend.interrupt(turn)

    async def drop_session(self, session_id: str) -> None:
        await self._backend.drop_session(session_id)

    async def health(self) -> Health:
        return await self._backend.health()

    async def diagnose(self) -> list[Diagnosis]:
        return await self._backend.diagnose()

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return self._backend.resume_command(session_id, cwd)


async def daemon_context(
    http: aiohttp.ClientSession, url: str, context_id: str, follow_ups: int, samples: Samples
) -> None:
    started = time.perf_counter()
    await _send(http, url, "Remember the word PAPAYA.", context_id)
    samples.first.append(time.perf_counter() - started)
    for _ in range(follow_ups):
        started = time.perf_counter()
        await _send(http, url, "Which word was it?", context_id)
        samples.follow.append(time.perf_counter() - started)


async def _sdk_turn(client: ClaudeSDKClient, text: str) -> None:
    await client.query(text)
    async for _ in client.receive_response():
        pass


async def sdk_context(settings: Settings, follow_ups: int, samples: Samples) -> None:
    config = settings.block(ClaudeConfig)
    started = time.perf_counter()
    client = ClaudeSDKClient(sdk_options(config, resume=None, marker=uuid.uuid4().hex))
    await client.connect()
    try:
        await _sdk_turn(client, "Remember the word PAPAYA.")
        samples.first.append(time.perf_counter() - started)
        for _ in range(follow_ups):
            started = time.perf_counter()
            await _sdk_turn(client, "Which word was it?")
            samples.follow.append(time.perf_counter() - started)
    finally:
        await client.disconnect()


def _ordered(samples: Samples, follow_ups: int) -> list[float]:
    ordered: list[float] = []
    for n, first in enumerate(samples.first):
        ordered += [first, *samples.follow[n * follow_ups : (n + 1) * follow_ups]]
    return ordered


def _line(name: str, samples: list[float]) -> str:
    ms = sorted(s * 1000 for s in samples)
    return (
        f"{name:<26} n={len(ms):<3} median {statistics.median(ms):7.1f} ms   "
        f"min {ms[0]:7.1f}   max {ms[-1]:7.1f}"
    )


async def main(args: argparse.Namespace) -> None:
    sdk, daemon = Samples(), Samples()
    async with AnthropicMock(api_key=KEY) as mock:
        with tempfile.TemporaryDirectory() as scratch:
            settings = _settings(mock, Path(scratch))
            timed = TimedBackend(create(settings.block(ClaudeConfig)))
            runner = web.AppRunner(create_app(settings, backend=timed))
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            url = f"http://127.0.0.1:{runner.addresses[0][1]}/a2a/jsonrpc"
            try:
                async with aiohttp.ClientSession() as http:
                    # Unmeasured: the 400 MB binary gets into the page cache.
                    await sdk_context(settings, 1, Samples())
                    await daemon_context(http, url, "warmup", 1, Samples())
                    # Interleaved, so a change in the machine's load hits both alike.
                    for n in range(args.contexts):
                        await sdk_context(settings, args.follow_ups, sdk)
                        await daemon_context(http, url, f"bench-{n}", args.follow_ups, daemon)
            finally:
                await runner.cleanup()
    print(_line("sdk first turn", sdk.first))
    print(_line("daemon first turn", daemon.first))
    print(_line("sdk follow-up turn", sdk.follow))
    print(_line("daemon follow-up turn", daemon.follow))
    first = statistics.median(daemon.first) - statistics.median(sdk.first)
    follow = statistics.median(daemon.follow) - statistics.median(sdk.follow)
    print(
        f"daemon overhead (median): first {first * 1000:+.1f} ms, follow-up {follow * 1000:+.1f} ms"
    )
    # timed.inside holds every daemon turn in the order it ran, the two warm-up turns first.
    turns = _ordered(daemon, args.follow_ups)
    own = [total - inside for total, inside in zip(turns, timed.inside[2:], strict=True)]
    print(_line("daemon's own time per turn", own))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--contexts", type=int, default=5)
    parser.add_argument("--follow-ups", type=int, default=4)
    asyncio.run(main(parser.parse_args()))


# ----- bench.turns: the same measurement in the shared agent-turn harness ---------------------


def _serve_mock(workdir: Path) -> tuple[str, Callable[[], None]]:
    """The mock model in a thread of its own (the harness runs the daemon as a process)."""
    ready = threading.Event()
    url: list[str] = []
    stop_event: list[asyncio.Event] = []
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        async with AnthropicMock(api_key=KEY) as mock:
            url.append(mock.url)
            stop_event.append(asyncio.Event())
            ready.set()
            await stop_event[0].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the mock model did not start")

    def stop() -> None:
        loop.call_soon_threadsafe(stop_event[0].set)
        thread.join(30)
        loop.close()

    return url[0], stop


def _claude_block(base_url: str, root: Path) -> dict[str, Any]:
    (root / "work").mkdir(parents=True, exist_ok=True)
    return {
        "workingDirectory": str(root / "work"),
        "home": str(root / "claude-home"),
        "env": {"ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": KEY},
    }


def _daemon_config(base_url: str, workdir: Path) -> dict[str, Any]:
    root = workdir / "daemon"
    return {
        "backend": "claude",
        "storage": {"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        "claude": _claude_block(base_url, root),
    }


def _direct(base_url: str, workdir: Path, session: str | None) -> str:
    """One turn with claude-agent-sdk, its own Claude Code process (resumed when `session`)."""
    config = load(
        None,
        overrides={"backend": "claude", "claude": _claude_block(base_url, workdir / "direct")},
        environ={},
    ).block(ClaudeConfig)

    async def turn() -> str:
        client = ClaudeSDKClient(sdk_options(config, resume=session, marker=uuid.uuid4().hex))
        await client.connect()
        try:
            await client.query("Say hello." if session is None else "Say it again.")
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    return message.session_id
        finally:
            await client.disconnect()
        raise RuntimeError("the turn ended without a result")

    return asyncio.run(turn())


def target() -> Any:
    """Claude's `bench.turns.Target` (found by `bench.turns.load_targets`)."""
    from bench.turns import Target  # noqa: PLC0415

    return Target(mock=_serve_mock, config=_daemon_config, direct=_direct)
