"""`ScriptedBackend`: an in-memory backend that implements the real `Backend` interface.

The prompt says what to do, so tests read as conversations:
  `echo: X`   answer X                 `ask: Q`    need input, asking Q
  `fail: M`   fail with M              `reject: M` reject with M
  `crash`     raise inside the backend `reply: X`  answer with a direct Message
  `block`     report progress, then wait until interrupted (or `release(task_id)`)
  `deltas: a|b|c`  stream text deltas
Anything else is echoed back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import anyio

from core.backend import (
    BackendEvent,
    Diagnosis,
    DirectReply,
    Failed,
    Health,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    TextContent,
    TextDelta,
    Turn,
)


class ScriptedBackend:
    name = "scripted"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self.options = dict(options or {})
        self.started = False
        self.closed = False
        self.turns: list[Turn] = []
        self.interrupted: list[str] = []
        self.blocked: dict[str, anyio.Event] = {}
        self.block_entered: dict[str, anyio.Event] = {}

    def entered(self, task_id: str) -> anyio.Event:
        return self.block_entered.setdefault(task_id, anyio.Event())

    def release(self, task_id: str) -> None:
        self.blocked.setdefault(task_id, anyio.Event()).set()

    async def start(self) -> None:
        self.started = True

    async def aclose(self) -> None:
        self.closed = True

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        self.turns.append(turn)
        yield SessionBound(turn.session_id or f"session-{turn.context_id}")
        command, _, arg = turn.text.partition(":")
        arg = arg.strip()
        match command.strip():
            case "echo":
                yield Text(arg)
            case "ask":
                yield NeedsInput(arg)
            case "fail":
                yield Failed("error", arg)
            case "reject":
                yield Failed("rejected", arg)
            case "crash":
                raise RuntimeError("backend exploded")
            case "reply":
                yield DirectReply((TextContent(arg),))
            case "deltas":
                for piece in arg.split("|"):
                    yield TextDelta(piece)
            case "block":
                yield Progress("blocking")
                self.entered(turn.task_id).set()
                await self.blocked.setdefault(turn.task_id, anyio.Event()).wait()
                yield Text("released")
            case _:
                yield Text(turn.text)

    async def interrupt(self, turn: Turn) -> None:
        self.interrupted.append(turn.task_id)

    async def drop_session(self, session_id: str) -> None:
        return None

    async def health(self) -> Health:
        return Health(ok=True)

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("backend", ok=True, detail="in-process, nothing to check")]

    def resume_command(self, session_id: str) -> str | None:
        return None
