"""The agent's shell tool: a command run by bash as a real subprocess below the daemon, through
the kit's process supervisor (own process group, parent-death signal, recorded for the orphan
guard), and stopped with its whole group when the turn stops."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteReceiveStream, Process

from core.backend import process

NAME = "bash"
TOOL: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": NAME,
        "description": "Run a shell command in the working directory; returns its output.",
        "parameters": {
            "type": "object",
            "properties": {
                "command": {"type": "string"},
                "description": {"type": "string", "description": "why, in a few words"},
            },
            "required": ["command"],
        },
    },
}
# What the model sees of a long output: its end, where errors and results usually are.
OUTPUT_LIMIT = 10_000


class Shell:
    """Runs commands; `stop_all()` stops every one still running (the turn was interrupted)."""

    def __init__(self, cwd: Path, env: Mapping[str, str]) -> None:
        self.cwd = cwd
        self.env = dict(env)
        self._running: set[Process] = set()

    async def run(self, command: str) -> str:
        """The command's output (stdout and stderr, as they came) and its exit code."""
        child = await process.spawn(["bash", "-c", command], cwd=self.cwd, env=self.env)
        self._running.add(child)
        output: list[bytes] = []
        try:
            assert child.stdin is not None  # open_process made pipes for all three
            await child.stdin.aclose()  # a command that reads its input gets EOF, not a hang
            async with anyio.create_task_group() as tg:
                for pipe in (child.stdout, child.stderr):
                    if pipe is not None:
                        tg.start_soon(_drain, pipe, output)
            code = await child.wait()
        finally:
            # Normal exit: reaps it and kills what it left in its group; cancel: stops it all.
            await process.stop(child, grace=2)
            self._running.discard(child)
        text = b"".join(output).decode("utf-8", "replace")[-OUTPUT_LIMIT:]
        return f"{text}\n(exit code {code})"

    async def stop_all(self) -> None:
        for child in list(self._running):
            await process.stop(child, grace=2)


async def _drain(pipe: ByteReceiveStream, into: list[bytes]) -> None:
    with contextlib.suppress(anyio.ClosedResourceError):  # `stop_all` closed the pipe
        async for data in pipe:
            into.append(data)
