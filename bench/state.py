"""Scale of state: 100,000 stored tasks and sessions.

`python -m bench.state build DB --n N` fills a SQLite file through the stores' own schema;
`python -m bench.state inproc DB` (its own process, logging configured as the daemon's, to a
file) measures store lookups and the two sweeps (expired sessions, retention of terminal tasks)
with a loop-lag monitor running beside them: the longest event-loop stall is the largest
overshoot of a 1 ms sleep. `run()` adds the daemon-level facts: RSS idle and under load,
GetTask over HTTP, size on disk.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from bench import proc, protocol
from bench.load import percentile

T = TypeVar("T")
PRINCIPAL = "anonymous"
TTL = timedelta(days=1)


def _ts(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _task_body(task_id: str, context_id: str, when: str) -> str:
    """A completed task as the daemon stores it after one short turn (about 900 bytes)."""
    message = {"contextId": context_id, "taskId": task_id, "parts": [{"text": "hello bench"}]}
    return json.dumps(
        {
            "id": task_id,
            "contextId": context_id,
            "status": {
                "state": "TASK_STATE_COMPLETED",
                "message": {**message, "messageId": f"a-{task_id}", "role": "ROLE_AGENT"},
                "timestamp": when,
            },
            "artifacts": [
                {
                    "artifactId": f"r-{task_id}",
                    "name": "response",
                    "parts": [{"text": "hello bench"}],
                }
            ],
            "history": [{**message, "messageId": f"u-{task_id}", "role": "ROLE_USER"}],
            "metadata": {"a2aWrapper": {"backend": "instant", "sessionId": f"s-{context_id}"}},
        },
        separators=(",", ":"),
    )


async def build(path: Path, n: int) -> None:
    """Create the schema through the real stores, then insert `n` completed tasks and `n`
    sessions, all created two days ago (so a one-day ttl or retention expires every one)."""
    from core.storage.sqlite.sessions import SqliteSessionStore  # noqa: PLC0415 - lazy: CLI entry
    from core.storage.sqlite.tasks import SqliteTaskStore  # noqa: PLC0415 - as above

    for store in (SqliteTaskStore(path), SqliteSessionStore(path)):
        await store.open()
        await store.close()
    old = _ts(datetime.now(UTC) - 2 * TTL)
    with sqlite3.connect(path) as conn:
        conn.executemany(
            "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?)",
            (
                (
                    PRINCIPAL,
                    f"t-{i:06d}",
                    f"c-{i:06d}",
                    "TASK_STATE_COMPLETED",
                    old,
                    _task_body(f"t-{i:06d}", f"c-{i:06d}", old),
                )
                for i in range(n)
            ),
        )
        conn.executemany(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
            ((PRINCIPAL, f"c-{i:06d}", "instant", f"s-c-{i:06d}", old, old, 1) for i in range(n)),
        )
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")


class LoopLag:
    """Largest overshoot of a 1 ms sleep while it runs: the longest the loop was blocked."""

    def __init__(self) -> None:
        self.worst = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _watch(self) -> None:
        while True:
            started = time.perf_counter()
            await asyncio.sleep(0.001)
            self.worst = max(self.worst, time.perf_counter() - started - 0.001)

    def __enter__(self) -> LoopLag:
        self._task = asyncio.create_task(self._watch())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._task is not None:
            self._task.cancel()


async def timed(fn: Callable[[], Awaitable[T]]) -> tuple[T, float, float]:
    """(result, seconds, longest loop stall in ms) of one awaited call."""
    with LoopLag() as lag:
        await asyncio.sleep(0.01)
        started = time.perf_counter()
        result = await fn()
        elapsed = time.perf_counter() - started
        await asyncio.sleep(0.01)
    return result, elapsed, lag.worst * 1000


async def inproc(path: Path, n: int, lookups: int) -> dict[str, Any]:
    from core import logs  # noqa: PLC0415 - lazy: CLI entry
    from core.sessions.manager import SessionManager  # noqa: PLC0415 - as above
    from core.storage.sqlite.sessions import SqliteSessionStore  # noqa: PLC0415 - as above
    from core.storage.sqlite.tasks import SqliteTaskStore  # noqa: PLC0415 - as above

    logs.configure("info")  # as the daemon: JSON lines on stderr (a file here)
    tasks, sessions = SqliteTaskStore(path), SqliteSessionStore(path)
    await tasks.open()
    await sessions.open()
    out: dict[str, Any] = {}
    try:
        for name, get in (
            ("task_get", lambda k: tasks.get(PRINCIPAL, f"t-{k:06d}")),
            ("session_get", lambda k: sessions.get(PRINCIPAL, f"c-{k:06d}")),
        ):
            samples = []
            with LoopLag() as lag:
                for _ in range(lookups):
                    started = time.perf_counter()
                    if await get(random.randrange(n)) is None:  # noqa: S311 - not crypto
                        raise RuntimeError(f"{name}: a stored key was not found")
                    samples.append((time.perf_counter() - started) * 1000)
            ordered = sorted(samples)
            out[name] = {
                "p50_ms": percentile(ordered, 50),
                "p99_ms": percentile(ordered, 99),
                "stall_ms": lag.worst * 1000,
            }

        async def drop(session_id: str) -> None:
            return None

        manager = SessionManager(sessions, "instant", drop, ttl=TTL)
        removed, seconds, stall = await timed(manager.sweep)
        out["session_sweep"] = {"removed": removed, "seconds": seconds, "stall_ms": stall}
        cutoff = datetime.now(UTC) - TTL
        purged, seconds, stall = await timed(lambda: tasks.purge_terminal(cutoff))
        out["task_purge"] = {"removed": purged, "seconds": seconds, "stall_ms": stall}
    finally:
        await sessions.close()
        await tasks.close()
    return out


def disk_mib(path: Path) -> float:
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")]
    return sum(f.stat().st_size for f in files if f.exists()) / 2**20


def get_task_latency(url: str, n: int, count: int) -> dict[str, float]:
    samples = []
    for _ in range(count):
        task_id = f"t-{random.randrange(n):06d}"  # noqa: S311 - not crypto
        address = f"{url}/a2a/rest/tasks/{task_id}"
        request = urllib.request.Request(address, headers={"A2A-Version": "1.0"})  # noqa: S310 - our URL
        started = time.perf_counter()
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310 - our URL
            response.read()
        samples.append((time.perf_counter() - started) * 1000)
    ordered = sorted(samples)
    return {"p50_ms": percentile(ordered, 50), "p99_ms": percentile(ordered, 99)}


def run(workdir: Path, *, n: int, load_seconds: float) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / "state.db"
    started = time.perf_counter()
    asyncio.run(build(db, n))
    out: dict[str, Any] = {"n": n, "build_seconds": time.perf_counter() - started}
    out["disk_mib"] = disk_mib(db)
    daemon_db = workdir / "daemon-state.db"
    shutil.copy(db, daemon_db)
    result = subprocess_json(
        [proc.PYTHON, "-m", "bench.state", "inproc", str(db), "--n", str(n)],
        workdir / "state-inproc.log",
    )
    out.update(result)
    config = protocol.instant_config({"kind": "sqlite", "path": str(daemon_db)})
    daemon = proc.daemon("daemon-state", workdir, config)
    with proc.running(daemon):
        out["daemon_rss_idle_mib"] = daemon.rss_mib()
        out["daemon_get_task"] = get_task_latency(daemon.url, n, 2000 if n > 1000 else 200)
        for concurrency in (16, 64):
            run_ = protocol.load(daemon, "SendMessage", concurrency, load_seconds)
            out[f"daemon_send_c{concurrency}"] = run_.__dict__
        out["daemon_rss_load_mib"] = protocol.peak_rss(daemon)
    out["daemon_disk_mib_after_load"] = disk_mib(daemon_db)
    return out


def subprocess_json(argv: list[str], log: Path) -> dict[str, Any]:
    with log.open("a") as stderr:
        out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            argv,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            check=True,
            cwd=proc.REPO,
            env={**os.environ, "PYTHONPATH": str(proc.REPO)},
        ).stdout
    return dict(json.loads(out))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["build", "inproc"])
    parser.add_argument("db", type=Path)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--lookups", type=int, default=5000)
    args = parser.parse_args()
    if args.mode == "build":
        asyncio.run(build(args.db, args.n))
        return
    json.dump(asyncio.run(inproc(args.db, args.n, args.lookups)), sys.stdout)
    print()


if __name__ == "__main__":
    main()
