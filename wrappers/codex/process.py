"""Processes of the Codex backend: the app-server is spawned and stopped with the core's
routine (`core.backend.process`); here, the tool commands Codex runs for a thread."""

from __future__ import annotations

import anyio

from core.backend import procfs
from core.backend.process import wait_exited


def thread_commands(thread_id: str) -> list[procfs.ProcessInfo]:
    """The tool commands Codex runs for `thread_id`: Codex gives each one CODEX_THREAD_ID and
    CODEX_TOOL_CALL_ID in its environment."""
    found = []
    for info in procfs.processes():
        environment = procfs.environment(info.pid)
        if environment.get("CODEX_THREAD_ID") == thread_id and "CODEX_TOOL_CALL_ID" in environment:
            found.append(info)
    return found


async def stop_thread_commands(thread_id: str, *, grace: float) -> None:
    """Make sure no command of `thread_id` survives: wait `grace` seconds for them to end
    (Codex kills them itself), then SIGKILL what is left and wait for it."""
    commands = thread_commands(thread_id)
    if not commands:
        return
    pids = [c.pid for c in commands]
    with anyio.move_on_after(grace):
        await wait_exited(pids)
        return
    for command in commands:
        procfs.kill(command)  # that very process: a pid reused meanwhile is left alone
    await wait_exited(pids)
