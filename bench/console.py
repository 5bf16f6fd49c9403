"""The web console's index with 1,000 tasks: server time of one page load.

The index shows the newest page of tasks (100, by context) with a link to older ones, every
pending approval whatever its page, and the usage of the contexts shown.

`python -m bench.console [--tasks N] [--contexts C] [--loads L]`: the daemon's HTTP app in
this process (instant backend, SQLite storage in a temporary folder, the console on as for a
loopback bind), N tasks sent over JSON-RPC across C contexts, then L loads of `/console`.
The server time of each load is the `ms` of its `http.request` log line (the daemon's own
measure, from the request id middleware to the response); the round trip seen by the client
is printed beside it. Target: the median under 200 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from structlog.testing import capture_logs

from bench.protocol import instant_config
from core.bindings.http.console.views import PAGE
from core.daemon import create_app
from core.settings import load

V1 = {"A2A-Version": "1.0"}


def _send(text: str, context_id: str) -> dict[str, Any]:
    message = {
        "messageId": os.urandom(8).hex(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "contextId": context_id,
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}


def _check(ok: bool, what: str) -> None:
    if not ok:
        raise RuntimeError(f"bench.console: {what} failed")


async def measure(tasks: int, contexts: int, loads: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-console-") as folder:
        store = {"kind": "sqlite", "path": str(Path(folder) / "tasks.sqlite3")}
        settings = load(None, overrides=instant_config(store), environ={})
        client = TestClient(TestServer(create_app(settings)))
        await client.start_server()
        try:
            for i in range(tasks):
                answer = await client.post(
                    "/a2a/jsonrpc",
                    json=_send(f"task {i}", f"ctx-{i % contexts}"),
                    headers=V1,
                )
                _check(answer.status == 200, f"SendMessage answered {answer.status}")
            first = await client.get("/console")  # signs in (anonymous) and follows
            page = await first.text()
            _check(f"{tasks} tasks in all" in page, "the index counts every task")
            _check(page.count('class="task"') == min(tasks, PAGE), "one page of tasks listed")
            client_ms: list[float] = []
            with capture_logs() as logs:
                for _ in range(loads):
                    started = time.perf_counter()
                    response = await client.get("/console")
                    await response.read()
                    client_ms.append((time.perf_counter() - started) * 1000)
            server_ms = [
                float(e["ms"])
                for e in logs
                if e.get("event") == "http.request" and e.get("path") == "/console"
            ]
        finally:
            await client.close()
    return {
        "tasks": tasks,
        "contexts": contexts,
        "loads": loads,
        "page_bytes": len(page.encode()),
        "server_ms_median": statistics.median(server_ms),
        "server_ms_max": max(server_ms),
        "client_ms_median": statistics.median(client_ms),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=1000)
    parser.add_argument("--contexts", type=int, default=50)
    parser.add_argument("--loads", type=int, default=20)
    args = parser.parse_args()
    print(summary(asyncio.run(measure(args.tasks, args.contexts, args.loads))))


def summary(out: dict[str, Any]) -> str:
    return (
        f"console index, {out['tasks']} tasks in {out['contexts']} contexts "
        f"({out['page_bytes'] // 1024} KiB): server {out['server_ms_median']:.1f} ms median, "
        f"{out['server_ms_max']:.1f} ms max over {out['loads']} loads; "
        f"client round trip {out['client_ms_median']:.1f} ms median"
    )


if __name__ == "__main__":
    main()
