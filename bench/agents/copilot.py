"""Latency of Copilot turns through the daemon vs straight through github-copilot-sdk.

Both paths run the real `copilot` CLI (offline, BYOK) against the in-process chat completions
mock, each with a Copilot home of its own and one shared, pre-warmed XDG cache. Per
conversation: a first turn (a new session) and a follow-up turn (the warm session); the two
paths take turns conversation by conversation. The daemon path is the real app on 127.0.0.1
(port 0) driven over HTTP with blocking SendMessage; the SDK path is `create_session` +
`send_and_wait`. A benchmark, not a test: nothing asserts timings.

    .venv/bin/python -m bench.agents.copilot [--conversations 10] [--cli PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from aiohttp import web
from copilot import CopilotClient, PermissionHandler, RuntimeConnection

from core import logs
from core.daemon import create_app
from core.settings import load
from harness.mock_models.openai_chat import MODEL, OpenAIChatMock

REPO = Path(__file__).resolve().parents[2]
BUNDLED_CLI = REPO / ".tools/node_modules/@github/copilot-linux-x64/copilot"
V1 = {"A2A-Version": "1.0"}

Timings = dict[str, list[float]]


def _row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (
        f"  {name:<16} median {statistics.median(ordered) * 1000:7.0f} ms   "
        f"p90 {p90 * 1000:7.0f} ms   min {ordered[0] * 1000:7.0f} ms   (n={len(ordered)})"
    )


def _env(work: Path, cache: Path, base_url: str) -> dict[str, str]:
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": str(cache),
        "COPILOT_HOME": str(work / "copilot-home"),
        "COPILOT_OFFLINE": "true",
        "COPILOT_PROVIDER_BASE_URL": base_url,
        "COPILOT_MODEL": MODEL,
    }


class SdkPath:
    """The same turns straight through github-copilot-sdk."""

    def __init__(self, cli: Path, work: Path, cache: Path, mock: OpenAIChatMock) -> None:
        self.project = work / "project"
        self.project.mkdir(parents=True)
        connection = RuntimeConnection.for_stdio(path=str(cli))
        connection.env = _env(work, cache, mock.base_url)
        self.client = CopilotClient(
            connection=connection, use_logged_in_user=False, working_directory=str(self.project)
        )
        self.provider: Any = {"type": "openai", "base_url": mock.base_url}

    async def start(self) -> None:
        await self.client.start()

    async def conversation(self, i: int, times: Timings) -> None:
        started = time.perf_counter()
        session = await self.client.create_session(
            session_id=str(uuid.uuid4()),
            on_permission_request=PermissionHandler.approve_all,
            model=MODEL,
            provider=self.provider,
            working_directory=str(self.project),
            streaming=True,
        )
        await session.send_and_wait(f"Hello, conversation {i}.", timeout=60)
        times["first turn"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await session.send_and_wait("And once more.", timeout=60)
        times["follow-up turn"].append(time.perf_counter() - started)
        await session.disconnect()

    async def stop(self) -> None:
        await self.client.stop()


class DaemonPath:
    """The real app on 127.0.0.1, driven over HTTP with blocking SendMessage."""

    def __init__(self, cli: Path, work: Path, cache: Path, mock: OpenAIChatMock) -> None:
        project = work / "project"
        project.mkdir(parents=True)
        settings = load(
            None,
            overrides={
                "backend": "copilot",
                "storage": {"kind": "memory"},
                "copilot": {
                    "workingDirectory": str(project),
                    "cliPath": str(cli),
                    "home": str(work / "copilot-home"),
                    "model": MODEL,
                    "offline": True,
                    "provider": {"baseUrl": mock.base_url},
                    "env": {"HOME": str(work / "home"), "XDG_CACHE_HOME": str(cache)},
                },
            },
            environ={},
        )
        self.runner = web.AppRunner(create_app(settings))
        self.url = ""
        self.http: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        await self.runner.setup()  # starts the backend, so the CLI
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/a2a/jsonrpc"
        self.http = aiohttp.ClientSession()

    async def _send(self, text: str, context: str) -> None:
        if self.http is None:
            raise RuntimeError("start() first")
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "SendMessage",
            "params": {
                "message": {
                    "messageId": str(uuid.uuid4()),
                    "contextId": context,
                    "role": "ROLE_USER",
                    "parts": [{"text": text}],
                }
            },
        }
        async with self.http.post(self.url, json=body, headers=V1) as response:
            reply = await response.json()
        state = reply["result"]["task"]["status"]["state"]
        if state != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"turn ended {state}: {reply}")

    async def conversation(self, i: int, times: Timings) -> None:
        started = time.perf_counter()
        await self._send(f"Hello, conversation {i}.", f"bench-{i}")
        times["first turn"].append(time.perf_counter() - started)
        started = time.perf_counter()
        await self._send("And once more.", f"bench-{i}")
        times["follow-up turn"].append(time.perf_counter() - started)

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.close()
        await self.runner.cleanup()


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-copilot-") as scratch:
        root = Path(scratch)
        cache = root / "cache"
        # The first run of the CLI unpacks it into the cache (~1.5 s); do that outside the
        # measurement.
        await anyio.run_process(
            [str(args.cli), "--version"],
            env={"PATH": "/usr/bin:/bin", "HOME": str(root), "XDG_CACHE_HOME": str(cache)},
        )
        async with OpenAIChatMock() as mock:
            paths: dict[str, SdkPath | DaemonPath] = {
                "github-copilot-sdk directly": SdkPath(args.cli, root / "sdk", cache, mock),
                "through the daemon": DaemonPath(args.cli, root / "daemon", cache, mock),
            }
            times: dict[str, Timings] = {
                name: {"CLI start": [], "first turn": [], "follow-up turn": []} for name in paths
            }
            try:
                for name, path in paths.items():
                    started = time.perf_counter()
                    await path.start()
                    times[name]["CLI start"].append(time.perf_counter() - started)
                # Interleaved, so a busy machine slows both paths alike.
                for i in range(args.conversations):
                    for name, path in paths.items():
                        await path.conversation(i, times[name])
            finally:
                for path in paths.values():
                    await path.stop()
    for name, timings in times.items():
        print(name)
        for label, values in timings.items():
            print(_row(label, values))
    sdk, daemon = times.values()
    overhead = [
        statistics.median(daemon[label]) - statistics.median(sdk[label])
        for label in ("first turn", "follow-up turn")
    ]
    print(
        f"daemon overhead (median): first turn {overhead[0] * 1000:+.0f} ms, "
        f"follow-up {overhead[1] * 1000:+.0f} ms"
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--cli", type=Path, default=BUNDLED_CLI)
    logs.configure("warning")
    asyncio.run(main(parser.parse_args()))


# ----- bench.turns: the same measurement in the shared agent-turn harness ---------------------


def _serve_mock(workdir: Path) -> tuple[str, Callable[[], None]]:
    """The mock model in a thread of its own (the harness runs the daemon as a process)."""
    ready = threading.Event()
    url: list[str] = []
    stop_event: list[asyncio.Event] = []
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        async with OpenAIChatMock() as mock:
            url.append(mock.base_url)
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


def _daemon_config(base_url: str, workdir: Path) -> dict[str, Any]:
    root = workdir / "daemon"
    (root / "project").mkdir(parents=True, exist_ok=True)
    return {
        "backend": "copilot",
        "storage": {"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        "copilot": {
            "workingDirectory": str(root / "project"),
            "cliPath": str(BUNDLED_CLI),
            "home": str(root / "copilot-home"),
            "model": MODEL,
            "offline": True,
            "provider": {"baseUrl": base_url},
            "env": {"HOME": str(root / "home"), "XDG_CACHE_HOME": str(workdir / "cache")},
        },
    }


def _direct(base_url: str, workdir: Path, session: str | None) -> str:
    """One turn through the SDK with a CLI of its own (the harness's direct path is one turn
    per process): a new session, or the stored one resumed."""
    work = workdir / "direct"
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)

    async def turn() -> str:
        connection = RuntimeConnection.for_stdio(path=str(BUNDLED_CLI))
        connection.env = _env(work, workdir / "cache", base_url)
        client = CopilotClient(
            connection=connection, use_logged_in_user=False, working_directory=str(project)
        )
        await client.start()
        try:
            options: dict[str, Any] = {
                "on_permission_request": PermissionHandler.approve_all,
                "model": MODEL,
                "provider": {"type": "openai", "base_url": base_url},
                "working_directory": str(project),
                "streaming": True,
            }
            if session is None:
                opened = await client.create_session(session_id=str(uuid.uuid4()), **options)
            else:
                opened = await client.resume_session(session, **options)
            await opened.send_and_wait(
                "Say hello." if session is None else "Say it again.", timeout=60
            )
            await opened.disconnect()
            return str(opened.session_id)
        finally:
            await client.stop()

    return asyncio.run(turn())


def target() -> Any:
    """Copilot's `bench.turns.Target` (picked up by `bench.turns.load_targets`)."""
    from bench.turns import Target  # noqa: PLC0415

    return Target(mock=_serve_mock, config=_daemon_config, direct=_direct)
