"""`EchoBackend`: the turn of the echo agent, built on the kit's `BackendBase`."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio

from core.backend import (
    ApprovalAnswer,
    ApprovalRequest,
    BackendEvent,
    Diagnosis,
    FileChange,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
)
from core.backend.base import BackendBase
from wrappers.echo import commands
from wrappers.echo.config import EchoConfig

_PIECES = re.compile(r"\S+\s*|\s+")


class EchoBackend(BackendBase):
    name = "echo"

    def __init__(self, config: EchoConfig) -> None:
        self._config = config

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        yield SessionBound(turn.session_id or f"echo-{uuid.uuid4().hex}")
        command = commands.parse(turn.text)
        match command:
            case commands.Ask(question=question):
                yield NeedsInput(question)
            case commands.Write():
                async for event in self._write(turn, command):
                    yield event
            case commands.Sleep(seconds=seconds):
                async for event in self._sleep(seconds):
                    yield event
            case commands.Refused(reason=reason):
                yield Text(reason)
            case commands.Echo(text=text):
                async for event in self._stream(text or "(an empty message)"):
                    yield event

    async def _stream(self, text: str) -> AsyncIterator[BackendEvent]:
        delay = self._config.chunk_delay / 1000
        for index, piece in enumerate(_PIECES.findall(text)):
            if index and delay:
                await anyio.sleep(delay)
            yield TextDelta(piece)

    async def _sleep(self, seconds: float) -> AsyncIterator[BackendEvent]:
        left = seconds
        while left > 0:
            yield Progress(f"working: {left:g} s left")
            step = min(1.0, left)
            await anyio.sleep(step)
            left -= step
        yield Text(f"Slept {seconds:g} s.")

    async def _write(self, turn: Turn, command: commands.Write) -> AsyncIterator[BackendEvent]:
        root = turn.cwd or self._config.working_directory.expanduser()
        where = commands.target(root, command.path)
        if where is None:
            yield Text(f"Not written: {command.path} leads outside the working directory.")
            return
        if turn.approvals == "ask":
            request = ApprovalRequest(
                request_id=uuid.uuid4().hex,
                kind="file",
                tool="write",
                summary=f"Write {command.path} ({len(command.content.encode())} bytes)",
                detail={"path": command.path},
            )
            yield request
            answer: ApprovalAnswer = await request.reply.wait()
            if answer.decision == "deny":
                yield Text(f"Not written: {command.path} (denied).")
                return
        call = uuid.uuid4().hex[:12]
        yield ToolCall(call, "write", {"path": command.path})
        existed = where.exists()
        try:
            await anyio.to_thread.run_sync(_put, where, command.content)
        except OSError as exc:
            yield ToolResult(call, exc.strerror or "cannot write", is_error=True)
            yield Text(f"Not written: {command.path} ({exc.strerror}).")
            return
        yield ToolResult(call, f"wrote {command.path}")
        yield FileChange(command.path, "modify" if existed else "add")
        yield Text(f"Wrote {command.path} ({len(command.content.encode())} bytes).")

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("agent", True, "built in: answers with what it is sent")]


def _put(where: Path, content: str) -> None:
    where.parent.mkdir(parents=True, exist_ok=True)
    where.write_text(content, encoding="utf-8")
