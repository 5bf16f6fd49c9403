"""`ScriptedBackend`: an in-memory backend that implements the real `Backend` interface.

The prompt says what to do, so tests read as conversations:
  `echo: X`   answer X                 `ask: Q`    need input, asking Q
  `fail: M`   fail with M              `reject: M` reject with M
  `refuse: K W`  the provider refused (kind K: auth, quota, rateLimit, upstream; its words W)
  `crash`     raise inside the backend `reply: X`  answer with a direct Message
  `block`     report progress, then wait until interrupted (or `release(task_id)`)
  `deltas: a|b|c`  stream text deltas     `history`   answer with the session's earlier prompts
  `metered: a|b`   the same, then report usage
  `paid: X`   wait while `gate` is set and not yet open, answer X, report 12 tokens and 1 USD
  `stall`     report progress, then wait forever (for idle timeouts)
  `tool: N`   call tool N, then answer
  `approve: N`  ask permission for N (when the turn asks), then run it or report the denial
  `write: P=T` write line T to file P in the turn's directory (its workspace, else
              `options.root`)
  `write-block: P=T`  the same, then `block`   `read: P`  answer with file P's text
  `sleep: S`  report progress, then answer after S seconds (a tick every 0.1 s)
With the option `journal` (a file), each turn appends JSON lines to it: `start`, each `tick`
of a sleep, `interrupt` (the daemon's call), and `end` (`how`: completed or stopped), each with
the context, task, process id and wall-clock time (replicas that share the file).
Anything else is echoed back. `running` counts the turns inside `run_turn` now, `most_at_once`
the most there ever were.

Sessions behave like an agent's: a turn without a session id starts a new one (a fresh id),
a turn with one continues it, and each session remembers its prompts. The sessions live in the
backend object, so a test can hand the same backend to a second app to play a daemon restart
(the agent's own storage survives; the daemon's memory does not).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import anyio

from core.backend import (
    ApprovalAnswer,
    ApprovalRequest,
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
    ToolCall,
    Turn,
    Usage,
    upstream_failure,
)
from core.backend.upstream import UpstreamKind


def _kind(arg: str) -> UpstreamKind:
    kind = arg.partition(" ")[0]
    assert kind in ("auth", "quota", "rateLimit", "upstream"), kind
    return kind  # type: ignore[return-value]  # checked just above


# Commands whose events depend on the argument only.
_SCRIPTED: dict[str, Callable[[str], list[BackendEvent]]] = {
    "echo": lambda arg: [Text(arg)],
    "ask": lambda arg: [NeedsInput(arg)],
    "fail": lambda arg: [Failed("error", arg)],
    "reject": lambda arg: [Failed("rejected", arg)],
    # `refuse: KIND provider words`: the provider refused the turn (auth, quota, rateLimit, ...).
    "refuse": lambda arg: [
        upstream_failure(_kind(arg), event="scripted.refused", detail=arg.partition(" ")[2])
    ],
    "reply": lambda arg: [DirectReply((TextContent(arg),))],
    "deltas": lambda arg: [TextDelta(piece) for piece in arg.split("|")],
    "metered": lambda arg: [
        *(TextDelta(piece) for piece in arg.split("|")),
        Usage(input_tokens=10, output_tokens=2, model="scripted-1"),
    ],
    "tool": lambda arg: [ToolCall("call-1", arg, {"command": "ls"}), Text(f"ran {arg}")],
    "paid": lambda arg: [
        Text(arg),
        Usage(input_tokens=10, output_tokens=2, cost_usd=1.0, model="scripted-1"),
    ],
}
# Commands whose turn waits while a test holds the backend's `gate` closed.
_GATED = frozenset({"paid"})


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
        self.answers: list[ApprovalAnswer] = []
        self.questions: list[ApprovalRequest] = []
        self.dropped: list[str] = []
        self.dropped_event = anyio.Event()
        self.resume_prefix: str | None = None
        self.running = 0
        self.most_at_once = 0
        # `paid` turns wait for it (when a test sets one), so they overlap for sure.
        self.gate: anyio.Event | None = None

    def entered(self, task_id: str) -> anyio.Event:
        return self.block_entered.setdefault(task_id, anyio.Event())

    def release(self, task_id: str) -> None:
        self.blocked.setdefault(task_id, anyio.Event()).set()

    async def start(self) -> None:
        self.started = True

    async def aclose(self) -> None:
        self.closed = True

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        self.running += 1
        self.most_at_once = max(self.most_at_once, self.running)
        self._journal(turn, "start")
        how = "stopped"
        try:
            async for event in self._turn(turn):
                yield event
            how = "completed"
        finally:
            self.running -= 1
            self._journal(turn, "end", how=how)

    def _journal(self, turn: Turn, event: str, **more: str) -> None:
        journal = self.options.get("journal")
        if not isinstance(journal, str):
            return
        line = {
            "event": event,
            "context": turn.context_id,
            "task": turn.task_id,
            "pid": os.getpid(),
            "t": time.time(),
            **more,
        }
        with Path(journal).open("a") as file:
            file.write(json.dumps(line) + "\n")

    def _directory(self, turn: Turn) -> Path:
        return turn.cwd or Path(str(self.options.get("root", ".")))

    async def _turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        self.turns.append(turn)
        session_id, earlier = self._open_session(turn)
        yield SessionBound(session_id)
        command, _, arg = turn.text.partition(":")
        command, arg = command.strip(), arg.strip()
        await self._through_gate(command)
        if command in _SCRIPTED:
            for event in _SCRIPTED[command](arg):
                yield event
            return
        match command:
            case "crash":
                raise RuntimeError("backend exploded")
            case "approve" | "sleep":
                timed = self._sleep if command == "sleep" else self._permission
                async for event in timed(turn, arg):
                    yield event
            case "history":
                yield Text(" | ".join(earlier) if earlier else "(no history)")
            case "write" | "write-block":
                name, _, text = arg.partition("=")
                await anyio.Path(self._directory(turn) / name).write_text(text + "\n")
                if command == "write-block":
                    self.entered(turn.task_id).set()
                    await self.blocked.setdefault(turn.task_id, anyio.Event()).wait()
                yield Text(f"wrote {name}")
            case "read":
                # Only the first line: a note the daemon adds (a patch applied) follows it.
                name = arg.splitlines()[0]
                yield Text(await anyio.Path(self._directory(turn) / name).read_text())
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

    async def _through_gate(self, command: str) -> None:
        if command in _GATED and self.gate is not None:
            await self.gate.wait()

    async def _permission(self, turn: Turn, tool: str) -> AsyncIterator[BackendEvent]:
        """Run `tool`, asking first when the turn says so (as a real agent's permission
        callback would: it waits for the reply while the turn is paused)."""
        if turn.approvals == "ask":
            request = ApprovalRequest(
                request_id=f"req-{tool}",
                kind="command",
                tool=tool,
                summary=f"Run `{tool}` in the working directory",
                detail={"command": tool},
            )
            self.questions.append(request)
            self.entered(turn.task_id).set()
            yield request
            answer = await request.reply.wait()
            self.answers.append(answer)
            if answer.decision == "deny":
                yield Text(f"denied: {answer.message or 'no reason given'}")
                return
        yield ToolCall("call-1", tool, {"command": tool})
        yield Text(f"ran {tool}")

    async def _sleep(self, turn: Turn, seconds: str) -> AsyncIterator[BackendEvent]:
        yield Progress("sleeping")
        ends = time.monotonic() + float(seconds)
        while time.monotonic() < ends:
            await anyio.sleep(0.1)
            self._journal(turn, "tick")
        yield Text("slept")

    def _open_session(self, turn: Turn) -> tuple[str, list[str]]:
        """The session this turn continues (or a new one), and its prompts before this turn.
        With the option `home` (a folder), each session is also a file there: daemons that
        share the folder play replicas whose agent home is on shared storage."""
        home = self.options.get("home")
        if isinstance(home, str):
            return self._open_shared_session(Path(home), turn)
        session_id = turn.session_id
        if session_id is None or session_id not in self.sessions:
            session_id = session_id or f"session-{uuid.uuid4().hex[:12]}"
            self.sessions[session_id] = []
        earlier = list(self.sessions[session_id])
        self.sessions[session_id].append(turn.text)
        return session_id, earlier

    def _open_shared_session(self, home: Path, turn: Turn) -> tuple[str, list[str]]:
        session_id = turn.session_id or f"session-{uuid.uuid4().hex[:12]}"
        file = home / f"{session_id}.json"
        earlier: list[str] = json.loads(file.read_text()) if file.exists() else []
        file.write_text(json.dumps([*earlier, turn.text]))
        return session_id, earlier

    async def interrupt(self, turn: Turn) -> None:
        self.interrupted.append(turn.task_id)
        self._journal(turn, "interrupt")

    async def drop_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)
        self.dropped.append(session_id)
        self.dropped_event.set()

    async def health(self) -> Health:
        return Health(ok=True)

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("backend", ok=True, detail="in-process, nothing to check")]

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return f"{self.resume_prefix} {session_id}" if self.resume_prefix else None
