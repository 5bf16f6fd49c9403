"""A backend run the way the engine runs it (`core.backend.base.running`: start, serve in a
task group, aclose), in an asyncio task of its own, so that a fixture may start it in its setup
and stop it in its teardown (which pytest runs in two different tasks, and a task group must be
entered and left in one)."""

from __future__ import annotations

import asyncio

from core.backend import Backend
from core.backend.base import running


class Hosted:
    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Return once the backend serves; raise what its start (or serve) raised."""
        self._task = asyncio.create_task(self._host(), name=f"host-{self.backend.name}")
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait([ready, self._task], return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._task.done():
            self._task.result()

    async def _host(self) -> None:
        async with running(self.backend):
            self._ready.set()
            await self._stop.wait()

    async def aclose(self) -> None:
        """Stop it (serve cancelled, then aclose); safe to call twice."""
        self._stop.set()
        if self._task is not None:
            await self._task
