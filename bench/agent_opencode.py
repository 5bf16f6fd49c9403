"""Turn latency of the OpenCode backend: through the daemon, the backend alone, and straight to
`opencode serve`.

All three use the real `opencode` binary against the project's mock model on 127.0.0.1, each
with its own server and private state dirs; their turns are interleaved (one of each in turn),
so a busy machine slows them alike. The difference is the daemon's own overhead (A2A request,
task engine, SQLite, event routing). A benchmark, not a test.

    .venv/bin/python -m bench.agent_opencode [--rounds 10]

"cold first turn": the first turn after start (the backend boots OpenCode's instance for the
directory during start; the direct path pays that in its first turn). "first turn": a new
context (a new OpenCode session) on a warm server. "follow-up": the next turn in that context.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from core.backend import SessionBound, TextContent, Turn
from core.backend.config.opencode import OpencodeConfig
from core.server.app import create_app
from core.settings import load
from tests.backends.opencode.support import TEST_ENV, provider_config
from tests.support.mock_models.openai_chat import OpenAIChatMock
from wrappers.opencode import create
from wrappers.opencode.launch import build_launch, find_binary

V1 = {"A2A-Version": "1.0"}


class Variant(Protocol):
    name: str

    async def start(self) -> None: ...

    async def first(self, n: int) -> str: ...

    async def follow_up(self, context: str) -> None: ...

    async def close(self) -> None: ...


def block(work: Path, mock: OpenAIChatMock) -> dict[str, Any]:
    (work / "project").mkdir(parents=True, exist_ok=True)
    return {
        "workingDirectory": str(work / "project"),
        "home": str(work / "home"),
        "model": "mock/mock-model",
        "env": TEST_ENV,
        "config": provider_config(mock.base_url),
    }


class Daemon:
    name = "through the daemon (A2A SendMessage)"

    def __init__(self, work: Path, mock: OpenAIChatMock) -> None:
        settings = load(
            None,
            overrides={
                "backend": "opencode",
                "storage": {"kind": "sqlite", "path": str(work / "tasks.sqlite3")},
                "opencode": block(work, mock),
            },
            environ={},
        )
        self._runner = web.AppRunner(create_app(settings))
        self._http = aiohttp.ClientSession()
        self._url = ""

    async def start(self) -> None:
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/a2a/jsonrpc"

    async def _send(self, text: str, context: str) -> None:
        message: dict[str, Any] = {
            "messageId": f"{context}-{text}",
            "role": "ROLE_USER",
            "contextId": context,
            "parts": [{"text": text}],
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        async with self._http.post(self._url, json=body, headers=V1) as response:
            result = await response.json()
        if result["result"]["task"]["status"]["state"] != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"turn did not complete: {result}")

    async def first(self, n: int) -> str:
        await self._send("hello", f"ctx-{n}")
        return f"ctx-{n}"

    async def follow_up(self, context: str) -> None:
        await self._send("again", context)

    async def close(self) -> None:
        await self._http.close()
        await self._runner.cleanup()


class BackendAlone:
    name = "backend alone (run_turn, no A2A)"

    def __init__(self, work: Path, mock: OpenAIChatMock) -> None:
        self._backend = create(OpencodeConfig.model_validate(block(work, mock)))

    async def start(self) -> None:
        await self._backend.start()

    async def _run(self, text: str, session: str | None) -> str:
        bound = session or ""
        turn = Turn("bench", "ctx", text, text, session, (TextContent(text),))
        async for event in self._backend.run_turn(turn):
            if isinstance(event, SessionBound):
                bound = event.session_id
        return bound

    async def first(self, n: int) -> str:
        return await self._run("hello", None)

    async def follow_up(self, context: str) -> None:
        await self._run("again", context)

    async def close(self) -> None:
        await self._backend.aclose()


class Direct:
    name = "direct (POST /session, POST /session/{id}/message)"

    def __init__(self, work: Path, mock: OpenAIChatMock) -> None:
        config = OpencodeConfig.model_validate(block(work, mock))
        self._launch = build_launch(config, find_binary(None), "bench-pw")
        auth = {"Authorization": aiohttp.encode_basic_auth("opencode", "bench-pw")}
        self._http = aiohttp.ClientSession(headers=auth)
        self._process: asyncio.subprocess.Process | None = None
        self._base = ""

    async def start(self) -> None:
        self._process = await asyncio.create_subprocess_exec(
            *self._launch.argv,
            cwd=self._launch.cwd,
            env=self._launch.env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        if self._process.stdout is None:
            raise RuntimeError("no stdout pipe")
        line = (await self._process.stdout.readline()).decode()
        self._base = line.split("listening on ")[1].strip()

    async def _post(self, path: str, body: dict[str, Any]) -> Any:
        async with self._http.post(self._base + path, json=body) as response:
            return json.loads(await response.text())

    async def _prompt(self, session: str, text: str) -> None:
        reply = await self._post(
            f"/session/{session}/message", {"parts": [{"type": "text", "text": text}]}
        )
        if reply["info"].get("error") is not None:
            raise RuntimeError(f"turn failed: {reply}")

    async def first(self, n: int) -> str:
        session = await self._post("/session", {"title": "bench"})
        await self._prompt(session["id"], "hello")
        return str(session["id"])

    async def follow_up(self, context: str) -> None:
        await self._prompt(context, "again")

    async def close(self) -> None:
        await self._http.close()
        if self._process is not None:
            self._process.terminate()
            await self._process.wait()


async def main(args: argparse.Namespace) -> None:
    timings: dict[str, dict[str, list[float]]] = {}

    def record(path: Variant, name: str, started: float) -> None:
        timings.setdefault(path.name, {}).setdefault(name, []).append(time.perf_counter() - started)

    async with OpenAIChatMock() as mock, AsyncExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="bench-opencode-")))
        paths: list[Variant] = [
            Daemon(work / "daemon", mock),
            BackendAlone(work / "backend", mock),
            Direct(work / "direct", mock),
        ]
        for path in paths:
            started = time.perf_counter()
            await path.start()
            stack.push_async_callback(path.close)
            record(path, "start", started)
        for path in paths:
            started = time.perf_counter()
            await path.first(-1)
            record(path, "cold first turn", started)
        for n in range(args.rounds):
            for path in paths:
                started = time.perf_counter()
                context = await path.first(n)
                record(path, "first turn", started)
                started = time.perf_counter()
                await path.follow_up(context)
                record(path, "follow-up", started)
    for name, rows in timings.items():
        print(f"OpenCode, {name}:")
        for row, values in rows.items():
            spread = f"{min(values) * 1000:.0f}-{max(values) * 1000:.0f}" if len(values) > 1 else ""
            median = statistics.median(values) * 1000
            print(f"  {row:<16} median {median:7.0f} ms  {spread:>12}  (n={len(values)})")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
