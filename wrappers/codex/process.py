"""Processes of the Codex backend: the app-server (spawned and stopped with the core's routine,
`core.backend.process`) and the tool commands Codex runs for a thread."""

from __future__ import annotations

import os
import signal
from contextlib import suppress
from pathlib import Path

import anyio
from anyio.abc import Process

from core.backend.process import stop, wait_exited


async def stop_agent_process(process: Process, *, grace: float = 5.0) -> int:
    """Stop the app-server with the core's routine (SIGTERM its group, wait `grace`, SIGKILL,
    reap), then release its pipes. Returns its exit code."""
    code = await stop(process, grace=grace)
    with anyio.CancelScope(shield=True):
        await process.aclose()
    return code


def thread_commands(thread_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the tool commands Codex runs for `thread_id`: Codex gives each one
    CODEX_THREAD_ID and CODEX_TOOL_CALL_ID in its environment."""
    wanted = f"CODEX_THREAD_ID={thread_id}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if wanted in environ and any(v.startswith(b"CODEX_TOOL_CALL_ID=") for v in environ):
            found.append(int(entry.name))
    return found


async def stop_thread_commands(thread_id: str, *, grace: float) -> None:
    """Make sure no command of `thread_id` survives: wait `grace` seconds for them to end
    (Codex kills them itself), then SIGKILL what is left and wait for it."""
    pids = thread_commands(thread_id)
    if not pids:
        return
    with anyio.move_on_after(grace):
        await wait_exited(pids)
        return
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    await wait_exited(pids)
