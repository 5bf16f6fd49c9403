"""Turn latency of the OpenCode backend: through the daemon, and straight to `opencode serve`.

All paths use the real `opencode` binary against the project's mock model on 127.0.0.1, with
private state dirs, so the difference is the daemon's own overhead (A2A request, task engine,
event stream routing) plus what each path does per turn. A benchmark, not a test.

    .venv/bin/python -m bench.agent_opencode [--rounds 5]

"cold first turn": the first turn after start (the daemon boots OpenCode's instance during
start; the direct path pays it in its first turn). "first turn": a new context (session) on a
warm server. "follow-up": the next turn in that context.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from core.backend import SessionBound, TextContent, Turn
from core.server.app import create_app
from core.settings import load
from tests.backends.opencode.support import TEST_ENV, provider_config
from tests.support.mock_models.openai_chat import OpenAIChatMock
from wrappers.opencode import create
from wrappers.opencode.launch import build_launch, find_binary

V1 = {"A2A-Version": "1.0"}
Timings = dict[str, list[float]]


async def timed(timings: Timings, name: str, op: Callable[[], Awaitable[Any]]) -> None:
    started = time.perf_counter()
    await op()
    timings.setdefault(name, []).append(time.perf_counter() - started)


def report(title: str, timings: Timings) -> None:
    print(title)
    for name, values in timings.items():
        shown = statistics.median(values) * 1000
        spread = f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f}" if len(values) > 1 else ""
        print(f"  {name:<18} median {shown:7.0f} ms  {spread:>12}  (n={len(values)})")


def block(work: Path, mock: OpenAIChatMock) -> dict[str, Any]:
    return {
        "workingDirectory": str(work / "project"),
        "home": str(work / "home"),
        "model": "mock/mock-model",
        "env": TEST_ENV,
        "config": provider_config(mock.base_url),
    }


async def through_daemon(work: Path, mock: OpenAIChatMock, rounds: int) -> Timings:
    settings = load(
        None,
        overrides={
            "backend": "opencode",
            "storage": {"kind": "sqlite", "path": str(work / "tasks.sqlite3")},
            "opencode": block(work, mock),
        },
        environ={},
    )
    timings: Timings = {}
    runner = web.AppRunner(create_app(settings))
    started = time.perf_counter()
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    timings["start"] = [time.perf_counter() - started]
    url = f"http://127.0.0.1:{runner.addresses[0][1]}/a2a/jsonrpc"
    try:
        async with aiohttp.ClientSession() as http:

            async def send(text: str, context: str) -> None:
                message = {
                    "messageId": f"{context}-{text}",
                    "role": "ROLE_USER",
                    "contextId": context,
                    "parts": [{"text": text}],
                }
                body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage"}
                body["params"] = {"message": message}
                async with http.post(url, json=body, headers=V1) as response:
                    result = await response.json()
                state = result["result"]["task"]["status"]["state"]
                if state != "TASK_STATE_COMPLETED":
                    raise RuntimeError(f"turn did not complete: {result}")

            await timed(timings, "cold first turn", lambda: send("hello", "ctx-cold"))
            for n in range(rounds):
                await timed(timings, "first turn", partial(send, "hello", f"ctx-{n}"))
                await timed(timings, "follow-up", partial(send, "again", f"ctx-{n}"))
    finally:
        await runner.cleanup()
    return timings


async def backend_alone(work: Path, mock: OpenAIChatMock, rounds: int) -> Timings:
    """The backend's own run_turn, without the A2A server and task engine around it."""
    from core.backend.config.opencode import OpencodeConfig  # noqa: PLC0415 - bench only

    backend = create(OpencodeConfig.model_validate(block(work, mock)))
    timings: Timings = {}
    started = time.perf_counter()
    await backend.start()
    timings["start"] = [time.perf_counter() - started]

    async def run(text: str, session: str | None) -> str:
        bound = session or ""
        turn = Turn("bench", "ctx", text, text, session, (TextContent(text),))
        async for event in backend.run_turn(turn):
            if isinstance(event, SessionBound):
                bound = event.session_id
        return bound

    try:
        sessions: list[str] = []

        async def first() -> None:
            sessions.append(await run("hello", None))

        await timed(timings, "cold first turn", first)
        for _ in range(rounds):
            await timed(timings, "first turn", first)
            await timed(timings, "follow-up", partial(run, "again", sessions[-1]))
    finally:
        await backend.aclose()
    return timings


async def direct(work: Path, mock: OpenAIChatMock, rounds: int) -> Timings:
    """The same turns with nothing but aiohttp and the server's own blocking prompt route."""
    from core.backend.config.opencode import OpencodeConfig  # noqa: PLC0415 - bench only

    config = OpencodeConfig.model_validate(block(work, mock))
    launch = build_launch(config, find_binary(None), "bench-pw")
    timings: Timings = {}
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *launch.argv,
        cwd=launch.cwd,
        env=launch.env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    if process.stdout is None:
        raise RuntimeError("no stdout pipe")
    line = (await process.stdout.readline()).decode()
    base = line.split("listening on ")[1].strip()
    timings["start"] = [time.perf_counter() - started]
    auth = {"Authorization": aiohttp.encode_basic_auth("opencode", "bench-pw")}
    try:
        async with aiohttp.ClientSession(headers=auth) as http:

            async def post(path: str, body: dict[str, Any]) -> Any:
                async with http.post(base + path, json=body) as response:
                    return json.loads(await response.text())

            async def prompt(session: str, text: str) -> None:
                reply = await post(
                    f"/session/{session}/message", {"parts": [{"type": "text", "text": text}]}
                )
                if reply["info"].get("error") is not None:
                    raise RuntimeError(f"turn failed: {reply}")

            async def first(text: str) -> str:
                session = await post("/session", {"title": "bench"})
                await prompt(session["id"], text)
                return str(session["id"])

            await timed(timings, "cold first turn", lambda: first("hello"))
            for _ in range(rounds):
                sessions: list[str] = []

                async def new_context() -> None:
                    sessions.append(await first("hello"))  # noqa: B023 - used at once

                await timed(timings, "first turn", new_context)
                await timed(timings, "follow-up", lambda: prompt(sessions[-1], "again"))  # noqa: B023
    finally:
        process.terminate()
        await process.wait()
    return timings


async def main(args: argparse.Namespace) -> None:
    async with OpenAIChatMock() as mock:
        paths = (
            ("through the daemon", through_daemon),
            ("backend alone, no A2A", backend_alone),
            ("direct to opencode serve", direct),
        )
        for name, path in paths:
            with tempfile.TemporaryDirectory(prefix="bench-opencode-") as tmp:
                work = Path(tmp)
                (work / "project").mkdir()
                timings = await path(work, mock, args.rounds)
            report(f"OpenCode, {name}:", timings)
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=5)
    asyncio.run(main(parser.parse_args()))
