"""Streaming latency: a backend event -> the client parsing the SSE event that carries it.

The daemon runs `output.mode: stream` (each text delta is its own artifact chunk) with the
instant backend's `stamp:` turns; `bench.load stamps` reads the streams in another process.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from bench import proc
from bench.protocol import instant_config


def run(
    workdir: Path, *, streams: int, events: int, concurrencies: tuple[int, ...]
) -> dict[str, Any]:
    store = {"kind": "sqlite", "path": str(workdir / "stream.db")}
    daemon = proc.daemon("daemon-stream", workdir, instant_config(store, output={"mode": "stream"}))
    out: dict[str, Any] = {"events_per_stream": events}
    with proc.running(daemon):
        for concurrency in concurrencies:
            result = subprocess.run(  # noqa: S603 - fixed argument list, no shell
                [
                    proc.PYTHON,
                    "-m",
                    "bench.load",
                    daemon.url,
                    "stamps",
                    "--streams",
                    str(streams),
                    "--events",
                    str(events),
                    "--concurrency",
                    str(concurrency),
                ],
                capture_output=True,
                text=True,
                check=True,
                cwd=proc.REPO,
                timeout=600,
            ).stdout
            out[f"c{concurrency}"] = json.loads(result)
    return out
