"""Throughput and memory of the daemon's request path (no coding agent: the TCK backend).

Starts the real app on 127.0.0.1 (port 0), drives it with aiohttp clients at a fixed
concurrency for a fixed number of requests, and prints requests/s and latency percentiles per
operation plus the process's peak RSS. A benchmark, not a test: nothing here asserts timings.

    make bench                      # defaults
    .venv/bin/python -m bench.throughput --requests 2000 --concurrency 16 --storage sqlite
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from core.server.app import create_app
from core.settings import load

V1 = {"A2A-Version": "1.0"}


def _message(n: int, prefix: str) -> dict[str, Any]:
    return {"messageId": f"{prefix}-{n}", "role": "ROLE_USER", "parts": [{"text": "bench"}]}


async def _measure(
    name: str, total: int, concurrency: int, op: Callable[[int], Awaitable[None]]
) -> None:
    latencies: list[float] = []
    queue: asyncio.Queue[int] = asyncio.Queue()
    for n in range(total):
        queue.put_nowait(n)

    async def worker() -> None:
        while not queue.empty():
            n = queue.get_nowait()
            started = time.perf_counter()
            await op(n)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    p50 = statistics.median(ordered) * 1000
    p99 = ordered[int(len(ordered) * 0.99) - 1] * 1000
    print(f"{name:<28} {total / elapsed:8.0f} req/s   p50 {p50:6.2f} ms   p99 {p99:6.2f} ms")


async def main(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        storage: dict[str, Any] = {"kind": args.storage}
        if args.storage == "sqlite":
            storage["path"] = str(Path(tmp) / "bench.sqlite3")
        settings = load(
            None,
            overrides={"backend": "tests.conformance.tck_backend:TckBackend", "storage": storage},
            environ={},
        )
        runner = web.AppRunner(create_app(settings))
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        base = f"http://127.0.0.1:{runner.addresses[0][1]}"
        task_ids: list[str] = []
        try:
            async with aiohttp.ClientSession(headers=V1) as http:

                async def send(n: int) -> None:
                    body = {
                        "jsonrpc": "2.0",
                        "id": n,
                        "method": "SendMessage",
                        "params": {"message": _message(n, "tck-complete-task")},
                    }
                    async with http.post(f"{base}/a2a/jsonrpc", json=body) as response:
                        task_ids.append((await response.json())["result"]["task"]["id"])

                async def get(n: int) -> None:
                    task_id = task_ids[n % len(task_ids)]
                    async with http.get(f"{base}/a2a/rest/tasks/{task_id}") as response:
                        await response.read()

                async def stream(n: int) -> None:
                    body = {"message": _message(n, "tck-stream-001")}
                    async with http.post(f"{base}/a2a/rest/message:stream", json=body) as response:
                        await response.read()

                async def card(n: int) -> None:
                    async with http.get(f"{base}/.well-known/agent-card.json") as response:
                        await response.read()

                print(
                    f"storage={args.storage} requests={args.requests} "
                    f"concurrency={args.concurrency}"
                )
                await _measure("SendMessage (blocking)", args.requests, args.concurrency, send)
                await _measure("GET /tasks/{id}", args.requests, args.concurrency, get)
                await _measure("message:stream (SSE)", args.requests, args.concurrency, stream)
                await _measure("agent card", args.requests, args.concurrency, card)
        finally:
            await runner.cleanup()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS {peak:.0f} MiB (client and server in one process)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--storage", choices=["sqlite", "memory"], default="sqlite")
    asyncio.run(main(parser.parse_args()))
