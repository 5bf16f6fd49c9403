"""The Codex backend's background work (the app-server's readers, unloading threads, stopping
turns whose consumer went away), in a task group that `serve()` hosts in the engine's task
group. A task's failure is logged; it never ends the group.

The group is shielded from the engine's cancel: at shutdown `serve()` first stops the app-server
(its readers then end on their own, at its EOF) and only then ends the group, so a reader is
never cancelled while the process it reads still runs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

log = structlog.get_logger(__name__)


class Background:
    def __init__(self, group: TaskGroup) -> None:
        self.task_group = group

    @classmethod
    async def host(
        cls,
        hosted: Callable[[Background | None], None],
        until: anyio.Event,
        *,
        task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run a shielded group, handed to `hosted`, until `until` is set (then `hosted(None)`
        and whatever still runs in it is cancelled). Start it with `tg.start`."""
        with anyio.CancelScope(shield=True):
            async with anyio.create_task_group() as group:
                hosted(cls(group))
                task_status.started()
                await until.wait()
                hosted(None)
                group.cancel_scope.cancel()

    def start_soon(self, func: Callable[..., Awaitable[Any]], *args: Any, name: str) -> None:
        """Run `func(*args)` in the group. Its failure is logged; it never ends the group."""

        async def guarded() -> None:
            try:
                await func(*args)
            except Exception:
                log.exception("codex.background_task_failed", task=name)

        self.task_group.start_soon(guarded, name=name)
