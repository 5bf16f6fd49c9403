"""The Claude Code child process behind one SDK client: finding it, and stopping it for sure.

claude-agent-sdk spawns the CLI (an argument list, no shell) and does not expose its pid. Each
client's environment carries a unique marker, so its process is found among this process's
children (Linux `/proc`; elsewhere the pid stays unknown and stopping relies on the SDK alone).
"""

from __future__ import annotations

import os
from typing import Protocol

import anyio
import structlog

from core.backend import procfs
from core.backend.process import stop_pid, track, untrack

log = structlog.get_logger(__name__)

MARKER_VARIABLE = "A2A_WRAPPER_AGENT_ID"


class Disconnectable(Protocol):
    async def disconnect(self) -> None: ...


def children(parent: int | None = None) -> list[int]:
    """Pids of the live children of `parent` (default: this process); [] without /proc."""
    return [info.pid for info in procfs.children(os.getpid() if parent is None else parent)]


def find_child(marker: str) -> int | None:
    """The child of this process whose environment holds `MARKER_VARIABLE=marker`."""
    for pid in children():
        if procfs.environment_has(pid, MARKER_VARIABLE, marker):
            return pid
    return None


async def started(marker: str) -> int | None:
    """The CLI the SDK just started for the client with `marker`, recorded for the daemon's
    process hygiene (the SDK does not say its pid)."""
    pid = find_child(marker)
    if pid is not None:
        await track(pid)
    return pid


def alive(pid: int) -> bool:
    """Whether `pid` still runs (an exited child not yet reaped counts as gone)."""
    info = procfs.read(pid)
    return info is not None and not info.zombie


async def stop(client: Disconnectable, pid: int | None, *, grace: float, force: bool) -> None:
    """Close `client` and make sure its process is gone: terminate -> wait -> kill -> reap.

    The SDK's disconnect closes stdin, waits for the exit and reaps the child; it escalates on
    its own only after several seconds. With the pid known, the kit's `stop_pid` runs beside
    it (SIGTERM after `grace`, at once when `force`, SIGKILL `grace` later) until the
    disconnect is done.
    """
    async with anyio.create_task_group() as tg:

        async def close() -> None:
            try:
                await client.disconnect()
            except Exception:
                log.warning("claude.disconnect_failed", pid=pid, exc_info=True)
            tg.cancel_scope.cancel()

        tg.start_soon(close)
        if pid is not None:
            await stop_pid(pid, grace=grace, force=force)
    if pid is not None:
        await untrack(pid)
