"""`ProcessBackend`: a backend whose every turn runs a real child process (`sleep`), for the
tests that prove no agent process outlives a turn, a cancel or the daemon.

Options: `pidDir` (each turn writes `<task_id>.pid` there once its child runs), `seconds`
(how long the child sleeps; default 600).
"""

from __future__ import annotations

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

    def resume_command(self, session_id: str) -> str | None:
        return None
