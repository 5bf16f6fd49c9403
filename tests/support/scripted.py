"""`ScriptedBackend`: an in-memory backend that implements the real `Backend` interface.

The prompt says what to do, so tests read as conversations:
  `echo: X`   answer X                 `ask: Q`    need input, asking Q
  `fail: M`   fail with M              `reject: M` reject with M
  `crash`     raise inside the backend `reply: X`  answer with a direct Message
  `block`     report progress, then wait until interrupted (or `release(task_id)`)
  `deltas: a|b|c`  stream text deltas     `history`   answer with the session's earlier prompts
  `stall`     report progress, then wait forever (for idle timeouts)
Anything else is echoed back.

Sessions behave like an agent's: a turn without a session id starts a new one (a fresh id),
a turn with one continues it, and each session remembers its prompts. The sessions live in the
backend object, so a test can hand the same backend to a second app to play a daemon restart
(the agent's own storage survives; the daemon's memory does not).
"""

from __future__ import annotations

import uuid
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
        self.sessions: dict[str, list[str]] = {}
        self.dropped: list[str] = []
        self.dropped_event = anyio.Event()
        self.resume_prefix: str | None = None

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
        session_id, earlier = self._open_session(turn)
        yield SessionBound(session_id)
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
            case "history":
                yield Text(" | ".join(earlier) if earlier else "(no history)")
            case "stall":
                yield Progress("stalling")
                self.entered(turn.task_id).set()
                await anyio.sleep_forever()
            case "block":
                yield Progress("blocking")
                self.entered(turn.task_id).set()
                await self.blocked.setdefault(turn.task_id, anyio.Event()).wait()
                yield Text("released")
            case _:
                yield Text(turn.text)

    def _open_session(self, turn: Turn) -> tuple[str, list[str]]:
        """The session this turn continues (or a new one), and its prompts before this turn."""
        session_id = turn.session_id
        if session_id is None or session_id not in self.sessions:
            session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
            self.sessions[session_id] = []
        earlier = list(self.sessions[session_id])
        self.sessions[session_id].append(turn.text)
        return session_id, earlier

    async def interrupt(self, turn: Turn) -> None:
        self.interrupted.append(turn.task_id)

    async def drop_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        self.dropped.append(session_id)
        self.dropped_event.set()

    async def health(self) -> Health:
        return Health(ok=True)

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("backend", ok=True, detail="in-process, nothing to check")]

    def resume_command(self, session_id: str) -> str | None:
        return f"{self.resume_prefix} {session_id}" if self.resume_prefix else None
