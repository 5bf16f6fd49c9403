"""The client side of ACP's `terminal/*`: commands the agent asks the daemon to run.

Each terminal is a real subprocess started by `core.backend.process.spawn` (no shell: the
agent's `command` and `args` as the argv; own process group, parent-death signal, recorded for
the orphan guard), in a directory confined to the working directory. Its stdout and stderr are
collected into one buffer that keeps the last `outputByteLimit` bytes (ACP: truncated from the
beginning). `kill_session` stops every terminal of a session (a cancelled turn).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog
from anyio.abc import ByteReceiveStream, Process, TaskGroup

from core.backend.process import spawn, stop

log = structlog.get_logger(__name__)

DEFAULT_OUTPUT_LIMIT = 1_000_000


@dataclass(eq=False)
class Terminal:
    session_id: str
    process: Process
    limit: int
    output: bytearray = field(default_factory=bytearray)
    truncated: bool = False
    exited: anyio.Event = field(default_factory=anyio.Event)
    readers: int = 2

    def take(self, chunk: bytes) -> None:
        self.output += chunk
        if len(self.output) > self.limit:
            # Cut at a character boundary: UTF-8 continuation bytes are 0b10xxxxxx.
            cut = len(self.output) - self.limit
            while cut < len(self.output) and (self.output[cut] & 0xC0) == 0x80:
                cut += 1
            del self.output[:cut]
            self.truncated = True

    @property
    def text(self) -> str:
        return self.output.decode("utf-8", errors="replace")

    @property
    def exit_code(self) -> int | None:
        code = self.process.returncode
        return code if code is not None and code >= 0 else None

    @property
    def signal(self) -> str | None:
        code = self.process.returncode
        return f"signal {-code}" if code is not None and code < 0 else None


class Terminals:
    """Every live terminal of one agent process, by id."""

    def __init__(self, tasks: TaskGroup) -> None:
        self._tasks = tasks
        self._terminals: dict[str, Terminal] = {}

    def get(self, terminal_id: str) -> Terminal:
        terminal = self._terminals.get(terminal_id)
        if terminal is None:
            raise KeyError(terminal_id)
        return terminal

    async def create(
        self,
        session_id: str,
        argv: list[str],
        *,
        cwd: Path,
        env: Mapping[str, str],
        limit: int | None,
    ) -> str:
        process = await spawn(argv, cwd=cwd, env={**os.environ, **env})
        terminal = Terminal(session_id, process, limit or DEFAULT_OUTPUT_LIMIT)
        terminal_id = "term-" + uuid.uuid4().hex[:12]
        self._terminals[terminal_id] = terminal
        for stream in (process.stdout, process.stderr):
            if stream is None:
                terminal.readers -= 1
            else:
                self._tasks.start_soon(self._read, terminal, stream)
        if terminal.readers == 0:
            self._tasks.start_soon(self._reap, terminal)
        log.debug("acp.terminal_started", terminal_id=terminal_id, pid=process.pid)
        return terminal_id

    async def _read(self, terminal: Terminal, stream: ByteReceiveStream) -> None:
        try:
            async for chunk in stream:
                terminal.take(chunk)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass
        terminal.readers -= 1
        if terminal.readers == 0:
            await self._reap(terminal)

    async def _reap(self, terminal: Terminal) -> None:
        await terminal.process.wait()
        await stop(terminal.process, grace=0)
        terminal.exited.set()

    async def kill(self, terminal_id: str) -> None:
        terminal = self.get(terminal_id)
        await stop(terminal.process, grace=1.0)

    async def release(self, terminal_id: str) -> None:
        terminal = self._terminals.pop(terminal_id, None)
        if terminal is not None:
            await stop(terminal.process, grace=1.0)

    async def kill_session(self, session_id: str) -> None:
        for terminal_id, terminal in list(self._terminals.items()):
            if terminal.session_id == session_id:
                await stop(terminal.process, grace=1.0)
                self._terminals.pop(terminal_id, None)

    async def aclose(self) -> None:
        for terminal in list(self._terminals.values()):
            await stop(terminal.process, grace=1.0)
        self._terminals.clear()
