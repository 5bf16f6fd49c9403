"""`EchoBackend`: the turn of the echo agent, built on the kit's `BackendBase`.

It is the reference of conversation control (core/backend/control.py): it declares every
capability and does each for real, in memory. A steered message shows in the next words it
echoes (or the next progress note of a `sleep:`); a forked session starts with the source's
transcript (`recall:` says it); `readOnly` and `plan` refuse `write:`; a chosen model is
reported as the turn's usage model."""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from core.backend import (
    MODES,
    ApprovalAnswer,
    ApprovalRequest,
    BackendEvent,
    Content,
    Diagnosis,
    FileChange,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    TextContent,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from core.backend.base import BackendBase
from core.backend.control import Capabilities, SteerRefusedError
from wrappers.echo import commands
from wrappers.echo.config import EchoConfig

_PIECES = re.compile(r"\S+\s*|\s+")
EFFORTS = ("low", "medium", "high")


@dataclass
class _Steered:
    """What was steered into one running turn: all of it, and what it has not echoed yet."""

    all: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    def take(self) -> list[str]:
        taken, self.pending = self.pending, []
        return taken


class EchoBackend(BackendBase):
    name = "echo"

    def __init__(self, config: EchoConfig) -> None:
        self._config = config
        # What each session was told, oldest first (a fork starts with a copy of its source's).
        self._transcripts: dict[str, list[str]] = {}
        # The running turns (by task id) and what was steered into them.
        self._running: dict[str, _Steered] = {}

    def capabilities(self) -> Capabilities:
        return Capabilities(
            steer=True,
            fork=True,
            models=None,
            efforts=EFFORTS,
            modes=MODES,
            approvals=True,
        )

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        running = self._running.get(turn.task_id)
        if running is None:
            raise SteerRefusedError(f"no turn of task {turn.task_id} is running")
        text = "\n\n".join(p.text for p in parts if isinstance(p, TextContent))
        running.pending.append(text)
        running.all.append(text)

    async def drop_session(self, session_id: str) -> None:
        self._transcripts.pop(session_id, None)

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        session = turn.session_id or f"echo-{uuid.uuid4().hex}"
        transcript = self._transcripts.setdefault(
            session, list(self._transcripts.get(turn.fork_of or "", []))
        )
        running = self._running[turn.task_id] = _Steered()
        try:
            yield SessionBound(session)
            if turn.options.model is not None:
                yield Usage(0, 0, model=turn.options.model)
            async for event in self._answer(turn, list(transcript)):
                yield event
        finally:
            transcript.append(turn.text)
            transcript.extend(running.all)
            if self._running.get(turn.task_id) is running:
                del self._running[turn.task_id]

    async def _answer(self, turn: Turn, earlier: list[str]) -> AsyncIterator[BackendEvent]:
        command = commands.parse(turn.text)
        match command:
            case commands.Ask(question=question):
                yield NeedsInput(question)
            case commands.Write() if turn.options.mode in ("plan", "readOnly"):
                yield Text(f"Not written: {command.path} (this turn is {turn.options.mode}).")
            case commands.Write():
                async for event in self._write(turn, command):
                    yield event
            case commands.Sleep(seconds=seconds):
                async for event in self._sleep(turn, seconds):
                    yield event
            case commands.Recall():
                yield Text(" | ".join(earlier) if earlier else "(nothing was said before)")
            case commands.Refused(reason=reason):
                yield Text(reason)
            case commands.Echo(text=text):
                async for event in self._stream(turn, text or "(an empty message)"):
                    yield event

    def _steered(self, turn: Turn) -> list[str]:
        running = self._running.get(turn.task_id)
        return running.take() if running is not None else []

    async def _stream(self, turn: Turn, text: str) -> AsyncIterator[BackendEvent]:
        delay = self._config.chunk_delay / 1000
        for index, piece in enumerate(_PIECES.findall(text)):
            if index and delay:
                await anyio.sleep(delay)
            for steered in self._steered(turn):
                yield TextDelta(f"[steered: {steered}] ")
            yield TextDelta(piece)

    async def _sleep(self, turn: Turn, seconds: float) -> AsyncIterator[BackendEvent]:
        left, steered = seconds, []
        while left > 0:
            yield Progress(f"working: {left:g} s left")
            step = min(1.0, left)
            await anyio.sleep(step)
            left -= step
            for text in self._steered(turn):
                steered.append(text)
                yield Progress(f"steered: {text}")
        yield Text(f"Slept {seconds:g} s." + "".join(f" Steered: {t}" for t in steered))

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
