"""A task group that lives in a task of its own.

`Backend.start()` and `aclose()` are separate calls, possibly from different tasks (aiohttp runs
startup and cleanup where it likes), while an anyio task group must be entered and left in one
task. So the backend's background work (the app-server's readers, the idle-thread evictor) runs
in a group hosted by a dedicated task: `open()` returns once the group exists, `aclose()` cancels
whatever still runs in it and returns once every task has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup

log = structlog.get_logger(__name__)


class Background:
    def __init__(self) -> None:
        self._group: TaskGroup | None = None
        self._stop = anyio.Event()
        self._host: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls) -> Background:
        background = cls()
        ready = anyio.Event()

        async def host() -> None:
            async with anyio.create_task_group() as group:
                background._group = group
                ready.set()
                await background._stop.wait()
                group.cancel_scope.cancel()

        background._host = asyncio.create_task(host(), name="codex-backend-background")
        await ready.wait()
        return background

    @property
    def task_group(self) -> TaskGroup:
        if self._group is None:
            raise RuntimeError("the background group is closed")
        return self._group

    def start_soon(self, func: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        """Run `func(*args)` in the group. Its failure is logged; it never ends the group."""

        async def guarded() -> None:
            try:
                await func(*args)
            except Exception:
                log.exception("codex.background_task_failed", task=name)

        self.task_group.start_soon(guarded, name=name)

    async def aclose(self) -> None:
        self._stop.set()
        if self._host is not None:
            await asyncio.shield(self._host)
        self._group = None
