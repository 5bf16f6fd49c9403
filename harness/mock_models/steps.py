"""Neutral model steps: what a scripted model does, said once for every mock wire format.

A test scripts *turns*; a turn is the list of steps the model takes in it, one step per model
request of that turn, in order:

    model.script([Shell("echo waiting && sleep 1000")])   # turn 1: call the shell tool
    model.script([Say("Noted.")], [Hang()])               # turns 2 and 3

Each mock translates a step into its own wire format (Anthropic messages SSE, OpenAI Responses
SSE, OpenAI chat completions SSE), choosing the tool names the agent's request offers.

How requests are matched to turns (`TurnScript`): only requests that offer tools count (an
agent's side requests, such as OpenCode's title request, get the mock's default answer). A
request that does not end with a tool result opens the next scripted turn; each request of that
turn takes its next step; once the turn's steps are used up, or with nothing scripted, the mock
answers as it always does (an echo of the history, or an acknowledgement of a tool result), so
an agent never loops on a scripted tool call. An `Upstream` error answers the agent's retries of
that request too (same last user text), as a failing endpoint would.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class Say:
    """A text reply, streamed in small chunks."""

    text: str


@dataclass(frozen=True)
class Shell:
    """A call of the agent's shell tool. `escalate`: the reason given when the model asks to run
    outside the agent's sandbox (Codex's `require_escalated`); agents without one ignore it."""

    command: str
    escalate: str | None = None


@dataclass(frozen=True)
class WriteFile:
    """A call of the agent's file-writing tool (a new file with `content`)."""

    path: str
    content: str


Refusal = Literal["error", "auth", "rateLimit", "quota"]


@dataclass(frozen=True)
class CallTool:
    """A call of a tool the agent offers by that exact name (an MCP server's tool, say, as
    the agent names it: `mcp__a2a__send_message` for Claude Code), with `arguments`."""

    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True)
class Upstream:
    """An HTTP error from the model endpoint, before any streaming; `message` goes into the
    provider's error body (a test puts a fake key in it to check it never reaches a caller).

    `refusal` other than "error" makes each mock answer as its real provider refuses a key
    (`auth`), rate-limits (`rateLimit`, with a retry-after of `retry_after` seconds in the
    provider's headers and body) or has no quota left (`quota`): the provider's own status,
    error body and headers (`refused_key()`, `rate_limited()`, `out_of_quota()`)."""

    status: int
    message: str = "scripted error"
    refusal: Refusal = "error"
    retry_after: int | None = None


def refused_key() -> Upstream:
    """The provider does not take the agent's key (invalid, revoked or expired)."""
    return Upstream(401, refusal="auth")


def rate_limited(seconds: int = 2) -> Upstream:
    """The provider rate-limits the agent's account: try again in `seconds`."""
    return Upstream(429, refusal="rateLimit", retry_after=seconds)


def out_of_quota() -> Upstream:
    """The provider's account has no quota (or credit) left."""
    return Upstream(429, refusal="quota")


@dataclass(frozen=True)
class Hang:
    """The reply starts, then nothing more comes until the agent goes away (or a release)."""


@dataclass(frozen=True)
class Hold:
    """`then`, answered only once the test calls `MockModel.release()` (or `reset()`): the
    request stays open meanwhile, so the agent's turn is busy (to steer it, or queue behind
    it) for as long as the test needs."""

    then: Action


Action = Say | Shell | WriteFile | CallTool | Upstream | Hang
"""What the model does in answer to one request (a `Hold` only delays one)."""
Step = Action | Hold
Turn = Sequence[Step]


class ModelRequest(Protocol):
    """What every mock records of a model request, in neutral terms."""

    @property
    def last_user_text(self) -> str: ...

    @property
    def offers_tools(self) -> bool: ...

    @property
    def ends_with_tool_output(self) -> bool: ...

    @property
    def went_away(self) -> bool:
        """The agent hung up before the reply was complete."""
        ...

    @property
    def model(self) -> str | None:
        """The model the agent asked for."""
        ...

    def texts(self, role: str) -> list[str]: ...

    def tool_outputs(self) -> list[str]: ...

    def dump(self) -> str:
        """The whole request body as JSON text (for "did the model see X" checks)."""
        ...


class TurnScript:
    """The scripted turns of one mock and which step answers which request (module
    docstring). Thread-safe: a test may script from another thread than the mock's loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._turns: list[list[Step]] = []
        self._current: list[Step] = []
        self._failing: tuple[str, Upstream] | None = None
        # Requests answered by a `Hold` step wait until the release count moves on.
        self._held: list[object] = []
        self._releases = 0

    def release(self) -> None:
        """Let every held request be answered."""
        with self._lock:
            self._releases += 1

    async def hold(self, request: object) -> None:
        """Return once `request` may be answered (at once unless a `Hold` step answers it)."""
        with self._lock:
            if not any(r is request for r in self._held):
                return
            seen = self._releases
        while True:
            with self._lock:
                if self._releases != seen:
                    self._held = [r for r in self._held if r is not request]
                    return
            await asyncio.sleep(0.05)

    def add(self, *turns: Turn) -> None:
        with self._lock:
            self._turns.extend(list(turn) for turn in turns)

    def clear(self) -> None:
        with self._lock:
            self._turns.clear()
            self._current = []
            self._failing = None
            self._held = []
            self._releases += 1

    def next_step(
        self, request: ModelRequest
    ) -> Say | Shell | WriteFile | CallTool | Upstream | Hang | None:
        """The step that answers `request`, or None for the mock's default answer."""
        if not request.offers_tools:
            return None
        with self._lock:
            if self._failing is not None and self._failing[0] == request.last_user_text:
                return self._failing[1]
            self._failing = None
            if not request.ends_with_tool_output:
                self._current = self._turns.pop(0) if self._turns else []
            step = self._current.pop(0) if self._current else None
            if isinstance(step, Hold):
                self._held.append(request)
                step = step.then
            if isinstance(step, Upstream):
                self._failing = (request.last_user_text, step)
            return step
