"""Latency of Codex turns through the daemon vs. driven directly with the openai-codex SDK.

Both paths run the same codex binary (openai-codex-cli-bin) against the same mock model
(harness/mock_models) on 127.0.0.1, with the same provider settings, so the difference is
the daemon's own overhead (HTTP, JSON-RPC, task store, sessions, event mapping). A benchmark,
not a test: nothing here asserts timings.

    .venv/bin/python -m bench.agents.codex [--rounds 10]

Measured per round, each in a new context / thread:
  first      a new conversation: thread/start + one turn (the app-server is already running)
  follow-up  the next turn of that conversation (warm thread)
  resumed    a turn on that conversation from a fresh process (daemon restart / new SDK client):
             app-server start + thread/resume + one turn
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from aiohttp import web

from core import logs
from core.daemon import create_app
from core.settings import Settings, load
from harness.codex import MOCK_KEY_VARIABLE, MODEL, codex_block, provider
from harness.mock_models.openai_responses import ResponsesMock

V1 = {"A2A-Version": "1.0"}
Samples = dict[str, list[float]]


async def timed(samples: Samples, name: str, op: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    started = time.perf_counter()
    result = await op(*args)
    samples.setdefault(name, []).append(time.perf_counter() - started)
    return result


def codex_settings(mock: ResponsesMock, root: Path) -> Settings:
    """Daemon settings serving the real Codex backend against the mock, tasks in SQLite."""
    card = {"name": "bench", "description": "codex", "skills": []}
    overrides = {
        "backend": "codex",
        "storage": {"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        "agentCard": card,
        "codex": codex_block(mock.base_url, root),
    }
    return load(None, overrides=overrides, environ={})


class Daemon:
    """The real app on 127.0.0.1 (port 0), as `a2a-wrapper serve` runs it."""

    def __init__(self, mock: ResponsesMock, root: Path) -> None:
        self.settings = codex_settings(mock, root)
        self.runner: web.AppRunner | None = None
        self.url = ""

    async def __aenter__(self) -> Daemon:
        self.runner = web.AppRunner(create_app(self.settings))
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = site.name.rstrip("/")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.runner is not None:
            await self.runner.cleanup()

    async def send(self, http: aiohttp.ClientSession, text: str, context: str, n: int) -> str:
        message = {
            "messageId": f"{context}-{n}",
            "contextId": context,
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
        body = {"jsonrpc": "2.0", "id": n, "method": "SendMessage", "params": {"message": message}}
        async with http.post(f"{self.url}/a2a/jsonrpc", json=body, headers=V1) as response:
            reply = await response.json()
        task = reply["result"]["task"]
        if task["status"]["state"] != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"turn did not complete: {task['status']}")
        return str(task["status"]["message"]["parts"][0]["text"])


class Sdk:
    """The same turns with the openai-codex SDK (synchronous: call it from a worker thread)."""

    def __init__(self, base_url: str, root: Path) -> None:
        from openai_codex import ApprovalMode, CodexConfig, Sandbox  # noqa: PLC0415

        self.work, home = root / "sdk-work", root / "sdk-home"
        self.work.mkdir(parents=True)
        home.mkdir(parents=True)
        table = ", ".join(f"{k}={_toml(v)}" for k, v in provider(base_url).items())
        self.config = CodexConfig(
            config_overrides=(
                "model_provider=mock",
                f"model={MODEL}",
                f"model_providers.mock={{{table}}}",
                "features.plugins=false",
                "features.apps=false",
                "analytics.enabled=false",
            ),
            env={"CODEX_HOME": str(home), MOCK_KEY_VARIABLE: "mock-key"},
            cwd=str(self.work),
        )
        self.options: dict[str, Any] = {
            "approval_mode": ApprovalMode.deny_all,
            "sandbox": Sandbox.workspace_write,
        }
        self.codex: Any = None

    def open(self) -> None:
        from openai_codex import Codex  # noqa: PLC0415

        self.codex = Codex(self.config)
        self.codex.thread_start(cwd=str(self.work), **self.options).run("warm up")

    def close(self) -> None:
        self.codex.close()

    def conversation(self, samples: Samples) -> str:
        started = time.perf_counter()
        thread = self.codex.thread_start(cwd=str(self.work), **self.options)
        thread.run("hi")
        samples.setdefault("first", []).append(time.perf_counter() - started)
        started = time.perf_counter()
        thread.run("again")
        samples.setdefault("follow-up", []).append(time.perf_counter() - started)
        return str(thread.id)

    def resumed(self, samples: Samples, thread_id: str) -> None:
        from openai_codex import Codex  # noqa: PLC0415

        started = time.perf_counter()
        with Codex(self.config) as fresh:
            fresh.thread_resume(thread_id, **self.options).run("after restart")
        samples.setdefault("resumed", []).append(time.perf_counter() - started)


async def measure(mock: ResponsesMock, root: Path, rounds: int) -> tuple[Samples, Samples]:
    """Rounds alternate between the two paths, so a busy machine slows both alike."""
    daemon_samples: Samples = {}
    sdk_samples: Samples = {}
    sdk = Sdk(mock.base_url, root)
    threads: list[str] = []
    async with aiohttp.ClientSession() as http:
        async with Daemon(mock, root / "daemon") as daemon:
            await daemon.send(http, "warm up", "warm-up", 0)
            await anyio.to_thread.run_sync(sdk.open)
            try:
                for r in range(rounds):
                    context = f"ctx-{r}"
                    await timed(daemon_samples, "first", daemon.send, http, "hi", context, 1)
                    await timed(daemon_samples, "follow-up", daemon.send, http, "again", context, 2)
                    threads.append(await anyio.to_thread.run_sync(sdk.conversation, sdk_samples))
            finally:
                await anyio.to_thread.run_sync(sdk.close)

        async def restart_and_send(context: str) -> str:
            async with Daemon(mock, root / "daemon") as daemon:
                return await daemon.send(http, "after restart", context, 3)

        for r, thread_id in enumerate(threads):
            await timed(daemon_samples, "resumed", restart_and_send, f"ctx-{r}")
            await anyio.to_thread.run_sync(sdk.resumed, sdk_samples, thread_id)
    return daemon_samples, sdk_samples


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return f'"{value}"'


def report(title: str, samples: Samples) -> None:
    print(title)
    for name, values in samples.items():
        ordered = sorted(values)
        print(
            f"  {name:<10} median {statistics.median(ordered) * 1000:6.0f} ms   "
            f"min {ordered[0] * 1000:6.0f} ms   max {ordered[-1] * 1000:6.0f} ms   "
            f"(n={len(ordered)})"
        )


async def main(rounds: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-codex-") as scratch:
        root = Path(scratch)
        async with ResponsesMock.running() as mock:
            daemon, sdk = await measure(mock, root, rounds)
    report("through the daemon (HTTP SendMessage, blocking)", daemon)
    report("openai-codex SDK directly (Thread.run)", sdk)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    logs.configure("warning")
    anyio.run(main, parser.parse_args().rounds)


# ----- bench.turns: the same measurement in the shared agent-turn harness ---------------------


def _serve_mock(workdir: Path) -> tuple[str, Callable[[], None]]:
    """The mock model in a thread of its own (the harness runs the daemon as a process)."""
    ready = threading.Event()
    url: list[str] = []
    stop_event: list[asyncio.Event] = []
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        async with ResponsesMock.running() as mock:
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
    return {
        "backend": "codex",
        "storage": {"kind": "sqlite", "path": str(root / "tasks.sqlite3")},
        "codex": codex_block(base_url, root),
    }


def _direct(base_url: str, workdir: Path, session: str | None) -> str:
    """One turn with the SDK in a process of its own (a new app-server each time, as the
    harness's direct path is one turn per process)."""
    from openai_codex import Codex  # noqa: PLC0415

    sdk = _SDKS.get(base_url)
    if sdk is None:
        sdk = _SDKS[base_url] = Sdk(base_url, workdir / "direct")
    with Codex(sdk.config) as codex:
        if session is None:
            thread = codex.thread_start(cwd=str(sdk.work), **sdk.options)
        else:
            thread = codex.thread_resume(session, **sdk.options)
        thread.run("Say hello." if session is None else "Say it again.")
        return str(thread.id)


_SDKS: dict[str, Sdk] = {}


def target() -> Any:
    """Codex's `bench.turns.Target` (register it as `TARGETS["codex"] = target()`)."""
    from bench.turns import Target  # noqa: PLC0415

    return Target(mock=_serve_mock, config=_daemon_config, direct=_direct)
