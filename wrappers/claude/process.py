"""The Claude Code child process behind one SDK client: finding it, and stopping it for sure.

claude-agent-sdk spawns the CLI (an argument list, no shell) and does not expose its pid. Each
client's environment carries a unique marker, so its process is found among this process's
children (Linux `/proc`; elsewhere the pid stays unknown and stopping relies on the SDK alone).
"""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path
from typing import Protocol

import anyio
import structlog

log = structlog.get_logger(__name__)

MARKER_VARIABLE = "A2A_WRAPPER_AGENT_ID"
PROC = Path("/proc")


class Disconnectable(Protocol):
    async def disconnect(self) -> None: ...


def children(parent: int | None = None) -> list[int]:
    """Pids of the live children of `parent` (default: this process); [] without /proc."""
    parent = os.getpid() if parent is None else parent
    found = []
    with suppress(OSError):
        for entry in PROC.iterdir():
            if not entry.name.isdigit():
                continue
            with suppress(OSError, ValueError, IndexError):
                stat = (entry / "stat").read_text()
                # Fields after the parenthesised command name: state, ppid, ...
                fields = stat[stat.rindex(")") + 2 :].split()
                if int(fields[1]) == parent and fields[0] != "Z":
                    found.append(int(entry.name))
    return found


def find_child(marker: str) -> int | None:
    """The child of this process whose environment holds `MARKER_VARIABLE=marker`."""
    needle = f"{MARKER_VARIABLE}={marker}".encode()
    for pid in children():
        with suppress(OSError):
            if needle in (PROC / str(pid) / "environ").read_bytes().split(b"\0"):
                return pid
    return None


def alive(pid: int) -> bool:
    """Whether `pid` still runs (an exited child not yet reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with suppress(OSError, IndexError):
        stat = (PROC / str(pid) / "stat").read_text()
        return stat[stat.rindex(")") + 2 :].split()[0] != "Z"
    return True


def _signal(pid: int, sig: signal.Signals) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


async def stop(client: Disconnectable, pid: int | None, *, grace: float, force: bool) -> None:
    """Close `client` and make sure its process is gone: terminate -> wait -> kill -> reap.

    The SDK's disconnect closes stdin, waits for the exit and reaps the child; it escalates on
    its own only after several seconds. With the pid known, SIGTERM goes out after `grace`
    (at once when `force`) and SIGKILL `grace` later. The signals stop as soon as the child is
    reaped, so a reused pid is never hit.
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
            await anyio.sleep(0 if force else grace)
            log.info("claude.terminate", pid=pid)
            _signal(pid, signal.SIGTERM)
            await anyio.sleep(grace)
            log.warning("claude.kill", pid=pid)
            _signal(pid, signal.SIGKILL)
