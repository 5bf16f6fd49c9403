"""Latency of Copilot turns through the daemon vs straight through github-copilot-sdk.

Both paths run the real `copilot` CLI (offline, BYOK) against the in-process chat completions
mock, each with a Copilot home of its own and one shared, pre-warmed XDG cache. Per
conversation: a first turn (a new session) and a follow-up turn (the warm session). The daemon
path is the real app on 127.0.0.1 (port 0) driven over HTTP with blocking SendMessage; the SDK
path is `create_session` + `send_and_wait`. A benchmark, not a test: nothing asserts timings.

    .venv/bin/python -m bench.agent_copilot [--conversations 10] [--cli PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from aiohttp import web
from copilot import CopilotClient, PermissionHandler, RuntimeConnection

from core import logs
from core.server.app import create_app
from core.settings import load
from tests.support.mock_models.openai_chat import MODEL, OpenAIChatMock

REPO = Path(__file__).resolve().parent.parent
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


async def via_sdk(cli: Path, work: Path, cache: Path, mock: OpenAIChatMock, n: int) -> Timings:
    times: Timings = {"CLI start": [], "first turn": [], "follow-up turn": []}
    project = work / "project"
    project.mkdir(parents=True)
    connection = RuntimeConnection.for_stdio(path=str(cli))
    connection.env = _env(work, cache, mock.base_url)
    client = CopilotClient(
        connection=connection, use_logged_in_user=False, working_directory=str(project)
    )
    started = time.perf_counter()
    await client.start()
    times["CLI start"].append(time.perf_counter() - started)
    provider: Any = {"type": "openai", "base_url": mock.base_url}
    try:
        for i in range(n):
            started = time.perf_counter()
            session = await client.create_session(
                session_id=str(uuid.uuid4()),
                on_permission_request=PermissionHandler.approve_all,
                model=MODEL,
                provider=provider,
                working_directory=str(project),
                streaming=True,
            )
            await session.send_and_wait(f"Hello, conversation {i}.", timeout=60)
            times["first turn"].append(time.perf_counter() - started)
            started = time.perf_counter()
            await session.send_and_wait("And once more.", timeout=60)
            times["follow-up turn"].append(time.perf_counter() - started)
            await session.disconnect()
    finally:
        await client.stop()
    return times


async def via_daemon(cli: Path, work: Path, cache: Path, mock: OpenAIChatMock, n: int) -> Timings:
    times: Timings = {"CLI start": [], "first turn": [], "follow-up turn": []}
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
    runner = web.AppRunner(create_app(settings))
    started = time.perf_counter()
    await runner.setup()  # starts the backend, so the CLI
    times["CLI start"].append(time.perf_counter() - started)
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    url = f"http://127.0.0.1:{port}/a2a/jsonrpc"

    async def send(http: aiohttp.ClientSession, text: str, context: str) -> None:
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
        async with http.post(url, json=body, headers=V1) as response:
            reply = await response.json()
        state = reply["result"]["task"]["status"]["state"]
        if state != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"turn ended {state}: {reply}")

    try:
        async with aiohttp.ClientSession() as http:
            for i in range(n):
                context = f"bench-{i}"
                started = time.perf_counter()
                await send(http, f"Hello, conversation {i}.", context)
                times["first turn"].append(time.perf_counter() - started)
                started = time.perf_counter()
                await send(http, "And once more.", context)
                times["follow-up turn"].append(time.perf_counter() - started)
    finally:
        await runner.cleanup()
    return times


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
            sdk = await via_sdk(args.cli, root / "sdk", cache, mock, args.conversations)
            daemon = await via_daemon(args.cli, root / "daemon", cache, mock, args.conversations)
    for title, timings in (("github-copilot-sdk directly", sdk), ("through the daemon", daemon)):
        print(title)
        for name, values in timings.items():
            print(_row(name, values))
    overhead = [
        statistics.median(daemon[name]) - statistics.median(sdk[name])
        for name in ("first turn", "follow-up turn")
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
