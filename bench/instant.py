"""Backends for benchmarks: answer at once, so only the daemon's own work is measured.

`InstantBackend` behaves like the smallest real agent turn: it names a session (every real
backend does, so the session store's writes are part of the cost) and answers with the prompt.
A prompt `stamp: N` instead sends N text deltas, each carrying `time.perf_counter_ns()` taken
just before the delta is handed to the daemon (CLOCK_MONOTONIC on Linux: comparable across
processes on one machine), for the backend-event -> SSE-client latency series; `stamp: N@MS`
waits MS milliseconds first (time for a watcher on another replica to subscribe).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from core.backend import BackendEvent, Diagnosis, SessionBound, Text, TextDelta, Turn
from core.backend.base import BackendBase

STAMP = "stamp:"


class InstantBackend(BackendBase):
    name = "instant"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or {})

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        yield SessionBound(turn.session_id or f"s-{uuid.uuid4().hex[:12]}")
        text = turn.text
        if text.startswith(STAMP):
            count, _, wait_ms = text.removeprefix(STAMP).partition("@")
            await anyio.sleep(int(wait_ms or 0) / 1000)
            for _ in range(int(count)):
                # Yield to the loop between events, as a real agent's stream would.
                await anyio.sleep(0.002)
                yield TextDelta(f"t={time.perf_counter_ns()};")
            return
        yield Text(text)

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("backend", ok=True, detail="in-process, answers at once")]
