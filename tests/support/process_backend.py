"""`ProcessBackend`: a backend whose every turn runs a real child process (`sleep`), for the
tests that prove no agent process outlives a turn, a cancel or the daemon; `StubbornBackend`
(below): one whose agents ignore being stopped.

Options: `pidDir` (each turn writes `<task_id>.pid` there once its child runs), `seconds`
(how long the child sleeps; default 600).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

from anyio.abc import Process

from core.backend import (
    BackendEvent,
    Diagnosis,
    Health,
    Progress,
    SessionBound,
    Text,
    Turn,
)
from core.backend.process import spawn, stop


class ProcessBackend:
    name = "process"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        options = dict(options or {})
        self._pid_dir = Path(str(options.get("pidDir", ".")))
        self._seconds = float(options.get("seconds", 600))
        self._children: dict[str, Process] = {}

    async def start(self) -> None:
        return None

    async def aclose(self) -> None:
        for process in list(self._children.values()):
            await stop(process, grace=1.0)

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        yield SessionBound(turn.session_id or f"proc-{turn.context_id}")
        process = await spawn(["sleep", str(self._seconds)])
        self._children[turn.task_id] = process
        try:
            (self._pid_dir / f"{turn.task_id}.pid").write_text(str(process.pid))
            yield Progress(f"child {process.pid} running")
            code = await process.wait()
            yield Text(f"child exited with {code}")
        finally:
            self._children.pop(turn.task_id, None)
            await stop(process, grace=1.0)

    async def interrupt(self, turn: Turn) -> None:
        process = self._children.pop(turn.task_id, None)
        if process is not None:
            await stop(process, grace=1.0)

    async def drop_session(self, session_id: str) -> None:
        return None

    async def health(self) -> Health:
        return Health(ok=True)

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("sleep", ok=True, detail="/bin/sleep")]

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return None


# The agent of `StubbornBackend`: it starts `sleep` in a session of its own (as Node's detached
# children do), ignores SIGTERM, writes "<own pid> <sleep pid>" to the file it is given, and
# waits.
STUBBORN_AGENT = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
tool = subprocess.Popen(["sleep", "1000"], start_new_session=True)
with open(sys.argv[1] + ".tmp", "w") as out:
    out.write(f"{os.getpid()} {tool.pid}")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(1000)
"""


class StubbornBackend(ProcessBackend):
    """A misbehaving backend: each turn runs an agent that starts a detached tool, and neither
    `interrupt()` nor `aclose()` stops anything. Only the daemon's process hygiene can.
    Options: `pidDir` (each turn writes `<task_id>.pids`: the agent's pid and its tool's)."""

    name = "stubborn"

    async def aclose(self) -> None:
        return None

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        yield SessionBound(turn.session_id or f"stubborn-{turn.context_id}")
        pids = self._pid_dir / f"{turn.task_id}.pids"
        process = await spawn([sys.executable, "-c", STUBBORN_AGENT, str(pids)])
        yield Progress(f"agent {process.pid} running")
        await process.wait()
        yield Text("agent exited")

    async def interrupt(self, turn: Turn) -> None:
        return None
