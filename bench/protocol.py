"""Protocol overhead: the daemon vs a bare aiohttp handler vs the official a2a-sdk server.

Every server is its own process on 127.0.0.1 (port 0); the load generator is another (`wrk`
when installed, else `bench.load`). Runs are interleaved (repeat -> operation -> concurrency ->
server) so background load on a shared machine spreads over every server alike. Besides
requests/s and latency, each run records the server's CPU time per request (from /proc),
which other processes' load disturbs far less than wall-clock throughput.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import proc

METHODS = ("SendMessage", "SendStreamingMessage")
WRK_SCRIPT = Path(__file__).with_name("wrk.lua")


@dataclass
class Run:
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_us: float
    errors: int


@dataclass
class Row:
    server: str
    method: str
    concurrency: int
    runs: list[Run]

    def median(self, field: str) -> float:
        return float(statistics.median(getattr(run, field) for run in self.runs))


def instant_config(store: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "backend": "bench.instant:InstantBackend",
        "agentCard": {"name": "bench", "description": "instant backend", "version": "0.1.0"},
        "server": {"host": "127.0.0.1", "port": 0},
        "storage": store,
        **extra,
    }


def post(
    url: str, method: str, text: str = "hello bench", *, context_id: str | None = None
) -> bytes:
    message: dict[str, Any] = {
        "messageId": os.urandom(8).hex(),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    if context_id is not None:
        message["contextId"] = context_id
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": method,
        "params": {"message": message},
    }
    request = urllib.request.Request(  # noqa: S310 - a URL this process built
        f"{url}/a2a/jsonrpc",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=600) as response:  # noqa: S310 - as above
        return bytes(response.read())


def check_answer(name: str, url: str) -> tuple[int, list[int]]:
    """One blocking and one streaming call must complete (the bare floor only answers);
    returns (reply size, event sizes)."""
    reply = post(url, "SendMessage")
    stream = post(url, "SendStreamingMessage").replace(b"\r\n", b"\n")
    events = [e for e in stream.split(b"\n\n") if e.strip()]
    if name == "bare":
        return len(reply), [len(e) for e in events]
    state = json.loads(reply)["result"]["task"]["status"]["state"]
    if state != "TASK_STATE_COMPLETED":
        raise RuntimeError(f"{name}: SendMessage ended {state}")
    if b"TASK_STATE_COMPLETED" not in events[-1]:
        raise RuntimeError(f"{name}: the stream did not complete: {events[-1][:200]!r}")
    return len(reply), [len(e) for e in events]


def load(server: proc.Server, method: str, concurrency: int, seconds: float) -> Run:
    cpu_before = server.cpu_seconds()
    wrk = shutil.which("wrk")
    if wrk:
        out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [
                wrk,
                "-t1",
                f"-c{concurrency}",
                f"-d{max(1, round(seconds))}s",
                "--timeout",
                "10s",
                "-s",
                str(WRK_SCRIPT),
                server.url,
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=seconds + 60,
            env={**os.environ, "BENCH_METHOD": method},
        ).stdout
        line = next(x for x in out.splitlines() if x.startswith("BENCH "))
        raw = json.loads(line.removeprefix("BENCH "))
        requests = raw["requests"]
        result = Run(
            rps=requests / (raw["duration_us"] / 1e6),
            p50_ms=raw["p50_us"] / 1000,
            p99_ms=raw["p99_us"] / 1000,
            cpu_us=0.0,
            errors=raw["errors"],
        )
    else:
        out = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [
                proc.PYTHON,
                "-m",
                "bench.load",
                server.url,
                "rpc",
                "--method",
                method,
                "--concurrency",
                str(concurrency),
                "--duration",
                str(seconds),
                "--warmup",
                "0",
            ],
            capture_output=True,
            text=True,
            check=True,
            timeout=seconds + 60,
            cwd=proc.REPO,
        ).stdout
        raw = json.loads(out)
        requests = raw["requests"]
        result = Run(raw["rps"], raw["p50_ms"], raw["p99_ms"], 0.0, raw["errors"])
    result.cpu_us = (server.cpu_seconds() - cpu_before) / max(1, requests) * 1e6
    return result


def servers(workdir: Path) -> list[proc.Server]:
    db = workdir / "daemon.db"
    return [
        proc.daemon("daemon", workdir, instant_config({"kind": "sqlite", "path": str(db)})),
        proc.daemon("daemon-mem", workdir, instant_config({"kind": "memory"}), log_level="warning"),
        proc.module("sdk", workdir, "bench.servers", "sdk"),
    ]


def run(
    workdir: Path, *, seconds: float, repeats: int, concurrencies: tuple[int, ...]
) -> tuple[list[Row], dict[str, Any]]:
    """Start every server, measure, stop them all. Returns the rows and side facts (reply
    sizes, RSS per server)."""
    started: list[proc.Server] = []
    facts: dict[str, Any] = {"client": "wrk" if shutil.which("wrk") else "bench.load"}
    try:
        for server in servers(workdir):
            started.append(server)
            server.start()
        reply_bytes, event_sizes = check_answer("daemon", started[0].url)
        facts["daemon_reply_bytes"], facts["daemon_event_bytes"] = reply_bytes, event_sizes
        bare = proc.module(
            "bare",
            workdir,
            "bench.servers",
            "bare",
            "--reply-bytes",
            str(reply_bytes),
            "--events",
            str(len(event_sizes)),
            "--event-bytes",
            str(round(statistics.mean(event_sizes)) - len("data: ")),
        )
        started.append(bare)
        bare.start()
        for server in started:
            facts[f"{server.name}_bytes"] = check_answer(server.name, server.url)
            facts[f"{server.name}_rss_idle_mib"] = server.rss_mib()
            for method in METHODS:  # warm every code path before measuring
                load(server, method, 16, min(2.0, seconds))
        rows = {
            (s.name, m, c): Row(s.name, m, c, [])
            for m in METHODS
            for c in concurrencies
            for s in started
        }
        for _ in range(repeats):
            for method in METHODS:
                for concurrency in concurrencies:
                    for server in started:
                        rows[(server.name, method, concurrency)].runs.append(
                            load(server, method, concurrency, seconds)
                        )
        for server in started:
            facts[f"{server.name}_rss_peak_mib"] = peak_rss(server)
        return list(rows.values()), facts
    finally:
        for server in reversed(started):
            server.stop()


def peak_rss(server: proc.Server) -> float:
    for line in Path(f"/proc/{server.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")
