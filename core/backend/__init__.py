"""The contract between the task engine and a coding-agent backend.

A backend turns "one user turn in one session" into an ordered stream of neutral events. This
package (with its config blocks) is the only thing wrappers import from the engine side; it
imports nothing else from `core`, so a backend never sees wire types or HTTP.
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

import anyio
import structlog

from core.backend import upstream


@dataclass(frozen=True)
class TextContent:
    text: str


@dataclass(frozen=True)
class FileContent:
    """A file, inline (`data`) or by reference (`url`); exactly one is set."""

    data: bytes | None = None
    url: str | None = None
    name: str | None = None
    media_type: str | None = None


@dataclass(frozen=True)
class DataContent:
    data: Any


Content = TextContent | FileContent | DataContent


Mode = Literal["default", "plan", "readOnly"]
MODES: tuple[Mode, ...] = ("default", "plan", "readOnly")
"""`plan`: the agent plans and answers, it does not edit; `readOnly`: it may read and run
read-only tools, it does not edit. Both really prevent edits, by the agent's own mechanism
(a permission mode, a sandbox policy, a read-only agent profile)."""


@dataclass(frozen=True)
class TurnOptions:
    """What one message chose for its turn only (None: the configured value). The engine
    has checked each value against the backend's `Capabilities`."""

    model: str | None = None
    effort: str | None = None
    mode: Mode | None = None

    @property
    def chosen(self) -> bool:
        return self.model is not None or self.effort is not None or self.mode is not None


NO_OPTIONS = TurnOptions()


@dataclass(frozen=True)
class Turn:
    """One user turn: what the backend must answer, and where it belongs.

    `session_id` is the backend session to resume, or None to start a new one. `deadline` is a
    wall-clock bound the engine also enforces; a backend may use it to size its own timeouts.
    """

    principal: str
    context_id: str
    task_id: str
    message_id: str
    session_id: str | None
    parts: tuple[Content, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)
    deadline: datetime | None = None
    # "ask": permission requests the backend's own policy does not decide become
    # ApprovalRequest events; "policy": the backend decides everything itself.
    approvals: Literal["policy", "ask"] = "policy"
    # What the turn may still cost under the daemon's budgets (USD; None = no cap): a backend
    # whose agent caps its own spending passes it on, so the agent stops itself in time.
    max_cost_usd: float | None = None
    # The directory the engine chose for this context's agent (its workspace: a worktree or
    # a copy); None = the configured workingDirectory. A backend runs the context's session
    # there: a process per session starts in it, one shared server is told it per session.
    cwd: Path | None = None
    # What the message chose for this turn only (model, effort, mode), checked by the engine
    # against the backend's declared Capabilities (core/backend/control.py).
    options: TurnOptions = NO_OPTIONS
    # The first turn of a forked context: the backend session to fork natively (session_id
    # is None). The backend starts the turn in a fork of it (the source stays untouched) and
    # binds the new session; only a backend declaring `fork` gets one.
    fork_of: str | None = None

    @property
    def text(self) -> str:
        """The text parts joined by blank lines (what most agents take as the prompt)."""
        return "\n\n".join(p.text for p in self.parts if isinstance(p, TextContent))


@dataclass(frozen=True)
class SessionBound:
    """The backend session serving this turn; emit it as soon as it is known."""

    session_id: str


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class Text:
    """A complete piece of the agent's answer (the final text of the turn, usually)."""

    text: str


@dataclass(frozen=True)
class Reasoning:
    text: str


@dataclass(frozen=True)
class Progress:
    """A human-readable progress note; becomes a WORKING status update, never stored."""

    text: str


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    input: Any


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    output: str
    is_error: bool = False
    exit_code: int | None = None
    """A command's exit code, when the agent reports one (core.backend.steps shows it)."""


@dataclass(frozen=True)
class FileChange:
    path: str
    kind: Literal["add", "modify", "delete"]


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    cost_usd: float | None = None
    model: str | None = None
    # The part of input_tokens read from or written to the model's prompt cache.
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0


@dataclass(frozen=True)
class ArtifactOut:
    """An output artifact. With `append`, the parts extend the artifact of the same id."""

    parts: tuple[Content, ...]
    artifact_id: str | None = None
    name: str | None = None
    append: bool = False
    last_chunk: bool = False


@dataclass(frozen=True)
class DirectReply:
    """Answer with a single Message and no task. Only honoured as the first event of the
    first turn of a task that no caller has seen yet; otherwise it completes the task."""

    parts: tuple[Content, ...]


@dataclass(frozen=True)
class NeedsInput:
    """The agent waits for the user: the task becomes INPUT_REQUIRED (or AUTH_REQUIRED)."""

    question: str
    kind: Literal["input", "auth"] = "input"


Decision = Literal["approve", "approve_always", "deny"]


@dataclass(frozen=True)
class ApprovalAnswer:
    """The caller's answer to an approval request (`message` is passed on to the agent)."""

    decision: Decision
    message: str | None = None


class ApprovalReply:
    """Where the answer to one ApprovalRequest arrives. The backend awaits `wait()` in its
    permission callback; the engine calls `answer()` once (a later call is ignored)."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self._answer: ApprovalAnswer | None = None

    def answer(self, answer: ApprovalAnswer) -> None:
        if self._answer is None:
            self._answer = answer
            self._event.set()

    @property
    def answered(self) -> bool:
        return self._answer is not None

    async def wait(self) -> ApprovalAnswer:
        await self._event.wait()
        if self._answer is None:  # pragma: no cover - the event is set after the answer
            raise RuntimeError("approval event set without an answer")
        return self._answer


@dataclass(frozen=True)
class ApprovalRequest:
    """The agent asks permission and waits (only with `turn.approvals == "ask"`).

    The task becomes INPUT_REQUIRED with `summary` and the structured request; the turn stays
    paused (the backend awaits `reply`) until the caller answers, the approval times out, or
    the turn is cancelled (then `interrupt` runs as usual)."""

    request_id: str
    kind: Literal["tool", "command", "file", "other"]
    tool: str
    summary: str
    detail: Mapping[str, Any] = field(default_factory=dict)
    reply: ApprovalReply = field(default_factory=ApprovalReply, compare=False)


FailureKind = Literal[
    "error", "rejected", "unavailable", "timeout", "auth", "quota", "rateLimit", "upstream"
]


@dataclass(frozen=True)
class Failed:
    """The turn failed. `kind="rejected"` means the agent refused the task; `auth`, `quota`,
    `rateLimit` and `upstream` are the model provider's refusals (upstream.py): `auth` ends
    the task AUTH_REQUIRED (the engine adds the fix the backend names, `credentials_fix`), the
    others FAILED with the kind (and `retry_after` seconds, `resets_at`) in the task's
    `a2aWrapper.error`.

    Contract: `message` becomes the task's status message, shown to whoever sent the task, so
    it is a sentence written for that caller (what happened, what to do). It never carries an
    exception's text, an SDK's error string or an upstream response body: those may quote
    credentials, prompts or paths. When such text is why the turn failed, build the event with
    `safe_failure()` (or `upstream_failure()`), which logs the raw text under an error id and
    puts the id in the message (and in `error_id`). A reason the wrapper itself wrote for the
    caller (a deadline, a refused permission, "the agent process exited") is used as it is.
    """

    kind: FailureKind
    message: str
    retry_after: float | None = None
    resets_at: datetime | None = None
    error_id: str | None = None


@dataclass(frozen=True)
class SessionReset:
    """The session the turn was to resume cannot be continued, so the turn runs in a fresh
    one; `reason` (for the caller) says why. Emit it before the new SessionBound. (A turn that
    binds another session than the one it resumed is a reset too, reason unknown.)"""

    reason: str


_log = structlog.get_logger(__name__)
# The context keys under which wrappers pass the provider's HTTP status to safe_failure.
_STATUS_KEYS = ("status", "status_code", "api_error_status", "http_status")


GENERIC_FIX = (
    "On the daemon's host, log the agent in again or give it a valid API key (`a2a-wrapper"
    " check` shows where its credentials come from), then send the message again."
)


def credentials_fix(backend: object) -> str:
    """What to do on the daemon's host when the provider refuses `backend`'s credentials: the
    backend's own `credentials_fix()` (the exact command or variable), else a general word."""
    fix = getattr(backend, "credentials_fix", None)
    return str(fix()) if callable(fix) else GENERIC_FIX


def in_directory(command: str, cwd: Path | None) -> str:
    """`command` run from `cwd` (a context's workspace) when one is given: what a resume
    command looks like for a session that works outside the configured workingDirectory."""
    return command if cwd is None else f"cd {shlex.quote(str(cwd))} && {command}"


def new_error_id() -> str:
    """An opaque id tying what a caller sees to the log line that holds the details."""
    return uuid.uuid4().hex[:12]


def with_error_id(sentence: str, error_id: str) -> str:
    """`sentence`, then where the details are: "... The daemon log has the details (error id
    X)." (one wording everywhere, so a caller can quote the id to whoever runs the daemon)."""
    sentence = sentence.strip()
    stop = "" if sentence.endswith((".", "!", "?")) else "."
    return f"{sentence}{stop} The daemon log has the details (error id {error_id})."


def safe_failure(
    kind: FailureKind,
    sentence: str,
    *,
    event: str,
    exc: BaseException | None = None,
    detail: str | None = None,
    **context: Any,
) -> Failed:
    """A Failed event that is safe to show the caller, for a failure caused by foreign text.

    `sentence` is written for the caller ("The agent refused the prompt."); the raw text (the
    traceback and text of `exc`, and/or `detail`: an upstream error body, an agent's own error
    words) is logged at error level as `event` with a fresh `error_id` and `context`; the
    message is `sentence` carrying that id. Never put the raw text into `sentence`.

    A failure of kind `error` or `unavailable` whose raw text names a provider's refusal
    (credentials, quota, rate limit, a provider error: `upstream.classify`), or whose context
    carries such an HTTP `status`, becomes that kind, with its sentence and what the text says
    of when to retry.
    """
    raw = " ".join(t for t in (detail, None if exc is None else repr(exc)) if t)
    found = None
    if kind in ("error", "unavailable"):
        # The words first (a 429 may say its quota is used up), then a status in the context.
        status = next((context[k] for k in _STATUS_KEYS if k in context), None)
        found = (upstream.classify(raw) if raw else None) or upstream.of_status(status)
    if found is not None:
        return upstream_failure(
            found, event=event, exc=exc, detail=detail, sentence=sentence, **context
        )
    error_id = new_error_id()
    if detail is not None:
        context["detail"] = detail
    if exc is not None:
        context["exc_info"] = exc
    _log.error(event, error_id=error_id, **context)
    return Failed(kind, with_error_id(sentence, error_id), error_id=error_id)


def upstream_failure(
    kind: upstream.UpstreamKind,
    *,
    event: str,
    exc: BaseException | None = None,
    detail: str | None = None,
    retry_after: float | None = None,
    resets_at: datetime | None = None,
    sentence: str | None = None,
    **context: Any,
) -> Failed:
    """The Failed event of a provider's refusal of `kind`: `sentence` (default: the kind's
    own, upstream.SENTENCES) for the caller, then when to retry, as given or as the raw text
    (`detail`, `exc`) says; the raw text is logged under the error id."""
    raw = " ".join(t for t in (detail, None if exc is None else str(exc)) if t)
    if retry_after is None and kind in ("rateLimit", "quota", "upstream"):
        retry_after = upstream.retry_hint(raw)
    if resets_at is None and kind in ("quota", "rateLimit"):
        resets_at = upstream.reset_hint(raw)
    error_id = new_error_id()
    if detail is not None:
        context["detail"] = detail
    if exc is not None:
        context["exc_info"] = exc
    _log.error(event, error_id=error_id, kind=kind, **context)
    sentence = (sentence or upstream.SENTENCES[kind]).strip()
    if not sentence.endswith((".", "!", "?")):
        sentence += "."
    if retry_after is not None and kind in ("rateLimit", "upstream"):
        sentence += f" Try again in {retry_after:g} s."
    if resets_at is not None:
        sentence += f" The quota resets at {resets_at.isoformat(timespec='seconds')}."
    return Failed(
        kind,
        with_error_id(sentence, error_id),
        retry_after=retry_after,
        resets_at=resets_at,
        error_id=error_id,
    )


BackendEvent = (
    SessionBound
    | TextDelta
    | Text
    | Reasoning
    | Progress
    | ToolCall
    | ToolResult
    | FileChange
    | Usage
    | ArtifactOut
    | DirectReply
    | NeedsInput
    | ApprovalRequest
    | Failed
    | SessionReset
)


@dataclass(frozen=True)
class Health:
    ok: bool
    detail: str = ""


@dataclass(frozen=True)
class Diagnosis:
    """One line of `a2a-wrapper check`: what was checked, whether it is fine, and the detail
    (never a secret's value)."""

    name: str
    ok: bool
    detail: str = ""


@runtime_checkable
class Backend(Protocol):
    """A coding agent behind the daemon.

    Concurrency: the engine runs at most one turn per (principal, contextId) at a time, but
    turns of different contexts run concurrently. `run_turn` is consumed by one task; the end of
    the iterator is the end of the turn. To stop a turn (client cancel, deadline, shutdown) the
    engine cancels the consumer of `run_turn` and then calls `interrupt(turn)`, which must
    really stop the agent before returning.
    """

    name: str

    async def start(self) -> None: ...

    async def aclose(self) -> None: ...

    def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]: ...

    async def interrupt(self, turn: Turn) -> None: ...

    async def drop_session(self, session_id: str) -> None: ...

    async def health(self) -> Health: ...

    async def diagnose(self) -> list[Diagnosis]:
        """Static checks for `a2a-wrapper check` (binary and version, working directory,
        credentials present or not); callable without `start()`."""
        ...

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        """The terminal command that opens `session_id` in the agent's own CLI, if any, from
        `cwd` (the session's workspace; None = the configured workingDirectory)."""
        ...
