"""`CrewBackend`: a scripted coding agent for crew tests, implementing the real `Backend`.

The first line of the prompt says what to do (the rest is context, e.g. earlier outputs):
  `say: X`            answer X                  `json: {...}`   answer that JSON as text
  `data: {...}`       answer a data artifact    `fail: M`       fail with M
  `flaky: X`          fail the first time this prompt is seen, then answer X
  `strict: {...}`     answer prose, unless the prompt says the previous answer was rejected:
                      then that JSON (an agent that follows the crew's retry hint)
  `verdicts: a,b`     answer {"verdict": ..., "notes": ...}, the n-th verdict on the n-th turn
                      of the session with this command (the last one repeats)
  `ask: Q`            need input, asking Q; the answer to it is echoed back (`answered: ...`)
  `block`             wait until `release()` (or an interrupt); `started` fires when it waits
  `meet: N`           wait until N turns are inside `meet` at once (a barrier; 10 s at most)
  `write: P=T`        write T (`\\n` for a newline) to file P in the turn's directory
  `read: P`           answer with file P's text from the turn's directory (`(no P)` if none)
  `pytest`            run pytest for real in the turn's directory; answer
                      {"result": "pass"|"fail", "failures": [...]} from what it printed
  anything else       echoed back
Every turn records its run interval (`intervals`, on `anyio.current_time()`), so tests can
assert what overlapped without timing anything.
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from core.backend import (
    ArtifactOut,
    BackendEvent,
    DataContent,
    Diagnosis,
    Failed,
    Health,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    Turn,
    Usage,
)


@dataclass
class Interval:
    task_id: str
    command: str
    start: float
    end: float | None = None


class Rendezvous:
    """A barrier shared by several backends (each in its own daemon)."""

    def __init__(self) -> None:
        self.inside = 0
        self.changed = anyio.Event()

    def enter(self) -> None:
        self.inside += 1
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for(self, count: int) -> bool:
        with anyio.move_on_after(10):
            while self.inside < count:
                await self.changed.wait()
            return True
        return False


class CrewBackend:
    def __init__(
        self, options: Mapping[str, Any] | None = None, rendezvous: Rendezvous | None = None
    ) -> None:
        self.options = dict(options or {})
        self.name = str(self.options.get("name", "crew-scripted"))
        self.rendezvous = rendezvous or Rendezvous()
        self.turns: list[Turn] = []
        self.intervals: list[Interval] = []
        self.interrupted: list[str] = []
        self.sessions: dict[str, list[str]] = {}
        self.asked: set[str] = set()
        self.seen: set[str] = set()
        self.started = anyio.Event()
        self._release = anyio.Event()

    def release(self) -> None:
        self._release.set()

    async def start(self) -> None:
        pass

    async def aclose(self) -> None:
        pass

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        self.turns.append(turn)
        session = turn.session_id or f"crew-session-{uuid.uuid4().hex[:8]}"
        earlier = self.sessions.setdefault(session, [])
        yield SessionBound(session)
        first, _, _ = turn.text.partition("\n")
        command, _, arg = first.partition(":")
        command, arg = command.strip(), arg.strip()
        earlier.append(command)
        interval = Interval(turn.task_id, command, anyio.current_time())
        self.intervals.append(interval)
        try:
            async for event in self._answer(turn, command, arg, earlier):
                yield event
        finally:
            interval.end = anyio.current_time()

    async def _answer(  # noqa: PLR0912 - one branch per scripted command reads best
        self, turn: Turn, command: str, arg: str, earlier: list[str]
    ) -> AsyncIterator[BackendEvent]:
        if turn.task_id in self.asked:
            self.asked.discard(turn.task_id)
            yield Text(f"answered: {turn.text}")
            return
        yield Usage(input_tokens=len(turn.text.split()), output_tokens=7)
        match command:
            case "say":
                yield Text(arg)
            case "json":
                yield Text(arg)
            case "data":
                yield ArtifactOut((DataContent(json.loads(arg)),), name="data")
            case "fail":
                yield Failed("error", arg)
            case "flaky":
                if turn.text in self.seen:
                    yield Text(arg)
                else:
                    self.seen.add(turn.text)
                    yield Failed("error", "flaky failure")
            case "strict":
                yield Text(arg if "was rejected" in turn.text else "Sure, here it is!")
            case "verdicts":
                verdicts = [v.strip() for v in arg.split(",")]
                n = earlier.count("verdicts") - 1
                verdict = verdicts[min(n, len(verdicts) - 1)]
                notes = "looks good" if verdict == "approve" else f"round {n + 1}: add tests"
                yield Text(json.dumps({"verdict": verdict, "notes": notes}))
            case "ask":
                self.asked.add(turn.task_id)
                yield NeedsInput(arg)
            case "block":
                yield Progress("blocking")
                self.started.set()
                await self._release.wait()
                yield Text("released")
            case "meet":
                self.rendezvous.enter()
                met = await self.rendezvous.wait_for(int(arg))
                yield Text("met" if met else "alone")
            case "write":
                name, _, text = arg.partition("=")
                await anyio.Path(_cwd(turn) / name).write_text(text.replace("\\n", "\n"))
                yield Text(f"wrote {name}")
            case "read":
                path = anyio.Path(_cwd(turn) / arg)
                yield Text(await path.read_text() if await path.exists() else f"(no {arg})")
            case "pytest":
                yield Text(json.dumps(await _pytest(_cwd(turn))))
            case _:
                yield Text(turn.text)

    async def interrupt(self, turn: Turn) -> None:
        self.interrupted.append(turn.task_id)

    async def drop_session(self, session_id: str) -> None:
        self.sessions.pop(session_id, None)

    async def health(self) -> Health:
        return Health(ok=True)

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("backend", ok=True, detail="scripted crew agent")]

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return None


def _cwd(turn: Turn) -> Path:
    if turn.cwd is None:
        raise RuntimeError("this turn has no directory (the daemon has no workspaces)")
    return turn.cwd


async def _pytest(cwd: Path) -> dict[str, Any]:
    """Run the suite in `cwd` as a tester would, and read its verdict from pytest's output."""
    done = await anyio.run_process(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"],
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        check=False,
    )
    out = done.stdout.decode(errors="replace")
    failures = [line for line in out.splitlines() if line.startswith(("FAILED", "ERROR"))]
    return {"result": "pass" if done.returncode == 0 else "fail", "failures": failures}


class RoleBackend(CrewBackend):
    """A stand-in for a real coding agent (the demo's `--scripted` mode): it answers by its
    role, whatever the prompt says. Options: `name` (reported as the backend), `role`
    (`writer`, `reviewer`, anything else) and, for a reviewer, `verdicts` (one per review of
    its session, the last one repeating)."""

    async def _answer(
        self, turn: Turn, command: str, arg: str, earlier: list[str]
    ) -> AsyncIterator[BackendEvent]:
        role = str(self.options.get("role", "writer"))
        n = len(earlier)
        yield Usage(input_tokens=len(turn.text.split()), output_tokens=20 + n)
        if role == "reviewer":
            verdicts = list(self.options.get("verdicts", ["approve"]))
            verdict = verdicts[min(n - 1, len(verdicts) - 1)]
            notes = "fine as it is" if verdict == "approve" else "handle empty titles"
            yield Text(json.dumps({"verdict": verdict, "notes": notes}))
        elif role == "writer":
            code = "def slugify(title: str) -> str:\n    return '-'.join(title.lower().split())"
            yield Text(f"# version {n}\n{code}")
        else:
            yield Text(f"{role} ({self.name}): done, turn {n}")
