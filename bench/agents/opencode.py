"""Turn latency of the OpenCode backend: through the daemon, the backend alone, and straight to
`opencode serve`.

All three use the real `opencode` binary against the project's mock model on 127.0.0.1, each
with its own server and private state dirs; their turns are interleaved (one of each in turn),
so a busy machine slows them alike. The difference is the daemon's own overhead (A2A request,
task engine, SQLite, event routing). A benchmark, not a test.

    .venv/bin/python -m bench.agents.opencode [--rounds 10]

"cold first turn": the first turn after start (the backend boots OpenCode's instance for the
directory during start; the direct path pays that in its first turn). "first turn": a new
context (a new OpenCode session) on a warm server. "follow-up": the next turn in that context.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import os
import signal
import statistics
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, Protocol

import aiohttp
from aiohttp import web

from core.backend import SessionBound, TextContent, Turn
from core.daemon import create_app
from core.settings import load
from harness.mock_models.openai_chat import OpenAIChatMock
from harness.opencode import TEST_ENV, provider_config
from wrappers.opencode import OpencodeConfig, create, server_launch

V1 = {"A2A-Version": "1.0"}


class Variant(Protocol):
    name: str

    async def start(self) -> None: ...

    async def first(self, n: int) -> str: ...

    async def follow_up(self, context: str) -> None: ...

    async def close(self) -> None: ...


def block(work: Path, mock: OpenAIChatMock | str) -> dict[str, Any]:
    """The `opencode` block for a daemon (or a direct server) in `work`, pointed at the mock."""
    (work / "project").mkdir(parents=True, exist_ok=True)
    return {
        "workingDirectory": str(work / "project"),
        "home": str(work / "home"),
        "model": "mock/mock-model",
        "env": TEST_ENV,
        "config": provider_config(mock if isinstance(mock, str) else mock.base_url),
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
        self._launch = server_launch(config, "bench-pw")
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


# ----- bench.turns: the same measurement in the shared agent-turn harness ---------------------


class _DirectServer:
    """A long-lived `opencode serve` for the harness's direct turns (blocking client)."""

    def __init__(self, base_url: str, work: Path) -> None:
        config = OpencodeConfig.model_validate(block(work, base_url))
        launch = server_launch(config, "bench-pw")
        self._auth = "Basic " + base64.b64encode(b"opencode:bench-pw").decode()
        self._proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
            launch.argv,
            cwd=launch.cwd,
            env=launch.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        line = self._proc.stdout.readline() if self._proc.stdout else ""
        if "listening on " not in line:
            self.stop()
            raise RuntimeError(f"opencode serve did not start: {line!r}")
        self._url = line.split("listening on ")[1].strip()

    def get(self, path: str) -> Any:
        return self.post(path, None)

    def post(self, path: str, body: dict[str, Any] | None) -> Any:
        request = urllib.request.Request(  # noqa: S310 - our own loopback server
            self._url + path,
            data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": self._auth, "Content-Type": "application/json"},
            method="GET" if body is None else "POST",
        )
        with urllib.request.urlopen(request, timeout=120) as response:  # noqa: S310
            return json.loads(response.read() or b"null")

    def turn(self, session: str | None) -> str:
        text = "Say hello." if session is None else "Say it again."
        if session is None:
            session = str(self.post("/session", {"title": "bench"})["id"])
        self.post(f"/session/{session}/message", {"parts": [{"type": "text", "text": text}]})
        return session

    def stop(self) -> None:
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGTERM)
            self._proc.wait(10)
        if self._proc.stdout is not None:
            self._proc.stdout.close()


class _DirectServers:
    """Fresh direct servers, one per conversation, booted ahead of time (untimed), so the
    direct path's first and follow-up turns are a new server's turns 1 and 2, like those of the
    daemon the harness starts for each round."""

    def __init__(self, base_url: str, work: Path) -> None:
        self._base_url = base_url
        self._work = work
        self._count = 0
        self._next: list[_DirectServer] = []
        self._booting: threading.Thread | None = None
        self.current: _DirectServer | None = None
        self._boot()

    def _boot(self) -> None:
        self._count += 1
        work = self._work / f"server-{self._count}"

        def boot() -> None:
            server = _DirectServer(self._base_url, work)
            server.get("/config/providers")  # what the backend does at start
            self._next.append(server)

        self._booting = threading.Thread(target=boot, daemon=True)
        self._booting.start()

    def fresh(self) -> _DirectServer:
        if self._booting is not None:
            self._booting.join(120)  # long done: it started after the previous follow-up
        if self.current is not None:
            self.current.stop()
        self.current = self._next.pop()
        return self.current

    def boot_next(self) -> None:
        """Boot the next conversation's server in the background; the harness starts a new
        daemon next (untimed), which is when this runs."""
        self._boot()

    def stop(self) -> None:
        if self._booting is not None:
            self._booting.join(120)
        for server in [*self._next, *([self.current] if self.current else [])]:
            server.stop()


_DIRECT: dict[str, _DirectServers] = {}


def _serve_mock(workdir: Path) -> tuple[str, Callable[[], None]]:
    """The mock model in a thread of its own (the harness runs the daemon as a process); its
    stop function also stops the direct server started for it."""
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
    # The direct path's first server boots now, before anything is timed.
    _DIRECT[url[0]] = _DirectServers(url[0], workdir / "direct")

    def stop() -> None:
        direct = _DIRECT.pop(url[0], None)
        if direct is not None:
            direct.stop()
        loop.call_soon_threadsafe(stop_event[0].set)
        thread.join(30)
        loop.close()

    return url[0], stop


def _daemon_config(base_url: str, workdir: Path) -> dict[str, Any]:
    root = workdir / "daemon"
    return {
        "backend": "opencode",
        "storage": {"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        "opencode": block(root, base_url),
    }


def _direct(base_url: str, workdir: Path, session: str | None) -> str:
    """One turn straight to `opencode serve`: a new conversation on a freshly booted server
    (booted ahead, untimed), its follow-up on the same server."""
    servers = _DIRECT[base_url]
    if session is None or servers.current is None:
        return servers.fresh().turn(session)
    session = servers.current.turn(session)
    servers.boot_next()
    return session


def target() -> Any:
    """OpenCode's `bench.turns.Target`."""
    from bench.turns import Target  # noqa: PLC0415 - bench.turns imports this module

    return Target(mock=_serve_mock, config=_daemon_config, direct=_direct)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=10)
    asyncio.run(main(parser.parse_args()))
