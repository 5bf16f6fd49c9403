"""Replicas of one agent on one PostgreSQL (storage.kind "postgres"), beside the SQLite
single daemon: SendMessage throughput with 1, 2 and 3 replicas (instant backend; one
`bench.load` client per replica, as a load balancer spreads the calls, the concurrency split
between them; the same client for the SQLite daemon),
and the cross-replica event latency: a backend event on the replica that runs the task -> a
SubscribeToTask client on another replica parsing the SSE event that carries it (the events go
through the database: appended, NOTIFYed, read by the watcher's replica).

The PostgreSQL server is the tests' own (harness/postgres.py): initdb in a temp
directory, fsync off, so this measures the engine, not a disk.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from pathlib import Path
from typing import Any

import aiohttp

from bench import proc
from bench.load import HEADERS, delay_summary, stamp_delays
from bench.protocol import check_answer, instant_config
from harness.postgres import fresh_database, running_server

TOTAL_CONCURRENCY = 16


def run(workdir: Path, *, seconds: float, streams: int, events: int) -> dict[str, Any]:
    out: dict[str, Any] = {"concurrency": TOTAL_CONCURRENCY}
    sqlite = proc.daemon(
        "sqlite",
        workdir,
        instant_config({"kind": "sqlite", "path": str(workdir / "single.db")}),
        log_level="warning",
    )
    with proc.running(sqlite):
        check_answer("sqlite", sqlite.url)
        out["sqlite_1"] = _spread_load([sqlite], seconds)
    with running_server() as server:
        for count in (1, 2, 3):
            url = asyncio.run(fresh_database(server))
            replicas = _replicas(workdir, f"pg{count}", url, count)
            try:
                out[f"postgres_{count}"] = _spread_load(replicas, seconds)
            finally:
                for replica in replicas:
                    replica.stop()
        url = asyncio.run(fresh_database(server))
        replicas = _replicas(workdir, "latency", url, 2, output={"mode": "stream"})
        try:
            out["cross_replica"] = asyncio.run(
                _cross_replica(replicas[0].url, replicas[1].url, streams, events)
            )
        finally:
            for replica in replicas:
                replica.stop()
    return out


def _replicas(workdir: Path, name: str, url: str, count: int, **extra: Any) -> list[proc.Server]:
    config = instant_config({"kind": "postgres", "url": url}, **extra)
    replicas = [
        proc.daemon(f"{name}-{i}", workdir, config, log_level="warning") for i in range(count)
    ]
    for replica in replicas:
        replica.start()
        check_answer(replica.name, replica.url)
    return replicas


def _spread_load(replicas: list[proc.Server], seconds: float) -> dict[str, Any]:
    """One `bench.load rpc` process per replica at the same time; their sum."""
    each = max(1, TOTAL_CONCURRENCY // len(replicas))
    clients = [
        subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
            [
                proc.PYTHON,
                "-m",
                "bench.load",
                replica.url,
                "rpc",
                "--concurrency",
                str(each),
                "--duration",
                str(seconds),
                "--warmup",
                "1",
            ],
            stdout=subprocess.PIPE,
            text=True,
            cwd=proc.REPO,
        )
        for replica in replicas
    ]
    results = [json.loads(client.communicate(timeout=seconds + 60)[0]) for client in clients]
    return {
        "rps": sum(r["rps"] for r in results),
        "p50_ms": max(r["p50_ms"] for r in results),
        "p99_ms": max(r["p99_ms"] for r in results),
        "errors": sum(r["errors"] for r in results),
    }


async def _cross_replica(owner: str, watcher: str, streams: int, events: int) -> dict[str, Any]:
    delays: list[float] = []
    async with aiohttp.ClientSession(headers=HEADERS) as http:
        for n in range(streams):
            message = {
                "messageId": uuid.uuid4().hex,
                "role": "ROLE_USER",
                "parts": [{"text": f"stamp:{events}@150"}],
            }
            body = {"jsonrpc": "2.0", "id": n, "method": "SendStreamingMessage"}
            body["params"] = {"message": message}
            async with http.post(f"{owner}/a2a/jsonrpc", json=body) as sent:
                first = await _next_event(sent.content)
                task_id = first["task"]["id"]
                subscribe = {"jsonrpc": "2.0", "id": n, "method": "SubscribeToTask"}
                subscribe["params"] = {"id": task_id}
                async with http.post(f"{watcher}/a2a/jsonrpc", json=subscribe) as watched:
                    async for line in watched.content:
                        received = time.perf_counter_ns()
                        if line.startswith(b"data:"):
                            event = json.loads(line[5:])["result"]
                            delays.extend(stamp_delays(event, received))
                await sent.read()
    return delay_summary(delays)


async def _next_event(content: aiohttp.StreamReader) -> dict[str, Any]:
    async for line in content:
        if line.startswith(b"data:"):
            result: dict[str, Any] = json.loads(line[5:])["result"]
            return result
    raise RuntimeError("the stream ended before its first event")
