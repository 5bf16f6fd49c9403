"""OpenCode's `/event` stream, one turn at a time, as neutral BackendEvents. Pure: no I/O.

A `TurnMapper` is told the session and the id of the user message the backend sent; it is fed
every event of that session in order and answers with the BackendEvents to emit and the
`Action`s the backend must take (reply to a permission, abort a turn that retries forever).

What belongs to the turn: the user message with our id, the assistant messages whose
`parentID` is it, and their parts. Session-level events (`session.error`, `session.idle`,
`session.status`) count only once our user message has been seen, so the late events of an
aborted previous turn cannot end or fail this one. The turn is over at a `session.idle` that
comes when every assistant message of the turn is complete (OpenCode sends one idle before the
aborted or failed message is finalised and another after).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Failed,
    FileChange,
    Progress,
    Reasoning,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    safe_failure,
    upstream,
    upstream_failure,
)

_WRITE_TOOLS = {"write"}
_EDIT_TOOLS = {"edit", "multiedit", "patch", "apply_patch"}


@dataclass(frozen=True)
class RejectPermission:
    request_id: str
    message: str


@dataclass(frozen=True)
class RejectQuestion:
    request_id: str


@dataclass(frozen=True)
class AbortTurn:
    """Abort the session's turn; the turn then fails with `reason`."""

    reason: str


@dataclass(frozen=True)
class AnswerApproval:
    """Wait for the caller's answer to `request` (the engine pauses the task), then pass it
    to OpenCode."""

    request_id: str
    request: ApprovalRequest


Action = RejectPermission | RejectQuestion | AbortTurn | AnswerApproval


@dataclass
class _Assistant:
    complete: bool = False
    tokens_in: int = 0
    tokens_out: int = 0
    cost: float = 0.0
    model: str | None = None


@dataclass
class _Part:
    kind: str
    text: str = ""  # the part's text emitted so far
    announced: bool = False  # ToolCall sent
    finished: bool = False  # ToolResult / Reasoning / FileChange sent


@dataclass
class Step:
    """What one event means for the turn."""

    events: list[BackendEvent] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)


class TurnMapper:
    """Maps the events of one session to one turn's BackendEvents (see the module docstring).

    `max_retries`: after that many model retries the mapper asks for an abort (None = never).
    `approvals`: "ask" turns OpenCode's permission requests into ApprovalRequests for the
    caller; "policy" denies them (nobody is there to answer).
    """

    def __init__(
        self,
        session_id: str,
        message_id: str,
        *,
        max_retries: int | None,
        approvals: Literal["policy", "ask"] = "policy",
    ) -> None:
        self.session_id = session_id
        self.message_id = message_id
        self.max_retries = max_retries
        self.approvals = approvals
        self.started = False  # our user message was seen
        self.idle_seen = False
        self.done = False
        # Set once the turn is known to have failed; the backend yields it at the end.
        self.failure: Failed | None = None
        self._assistants: dict[str, _Assistant] = {}
        self._parts: dict[str, _Part] = {}
        self._any_text = False
        self._aborting = False
        # The user messages of this turn (ours, then each steer) and the steers no assistant
        # message has answered yet: the turn goes on until each is answered.
        self._prompts = {message_id}
        self._unanswered: set[str] = set()

    @property
    def settled(self) -> bool:
        """Every assistant message of the turn is complete and every steer answered (an idle
        now ends the turn)."""
        return all(a.complete for a in self._assistants.values()) and not self.awaiting_steer

    @property
    def awaiting_steer(self) -> bool:
        """A steer was sent that the turn has not answered (and can still answer)."""
        return bool(self._unanswered) and self.failure is None and not self._aborting

    def steered(self, message_id: str) -> None:
        """A user message sent into this running turn: its answers are the turn's too."""
        self._prompts.add(message_id)
        self._unanswered.add(message_id)

    def unsteered(self, message_id: str) -> None:
        """The steer was refused: the turn no longer waits for its answer."""
        self._prompts.discard(message_id)
        self._unanswered.discard(message_id)
        self.done = self.done or (self.idle_seen and self.settled)

    def abandon_steers(self) -> None:
        """The turn is being stopped: an unanswered steer will not be answered."""
        self._unanswered.clear()

    def usage(self) -> Usage | None:
        """Tokens and cost summed over the turn's model calls (None before any)."""
        done = [a for a in self._assistants.values() if a.complete]
        if not done:
            return None
        cost = sum(a.cost for a in done)
        return Usage(
            input_tokens=sum(a.tokens_in for a in done),
            output_tokens=sum(a.tokens_out for a in done),
            cost_usd=cost if cost else None,
            model=next((a.model for a in reversed(done) if a.model), None),
        )

    def feed(self, event: dict[str, Any]) -> Step:
        """Map one event of this session. After `done`, everything is ignored."""
        step = Step()
        if self.done:
            return step
        kind = event.get("type")
        props = event.get("properties")
        if not isinstance(props, dict):
            return step
        match kind:
            case "message.updated":
                self._message(props.get("info"))
            case "message.part.delta":
                self._delta(props, step)
            case "message.part.updated":
                self._part(props.get("part"), step)
            case "session.status" if self.started:
                self._status(props.get("status"), step)
            case "session.error" if self.started:
                self._error(props.get("error"))
            case "session.idle" if self.started:
                self.idle_seen = True
                self.done = self.settled
            case "permission.asked" if self.started:
                self._permission(props, step)
            case "question.asked" if self.started:
                step.actions.append(RejectQuestion(str(props.get("id"))))
                step.events.append(Progress("Declined the agent's question: nobody can answer"))
        return step

    # ----- messages and parts ------------------------------------------------------------------

    def _message(self, info: Any) -> None:
        if not isinstance(info, dict):
            return
        if info.get("role") == "user":
            if info.get("id") == self.message_id:
                self.started = True
            return
        parent = info.get("parentID")
        if info.get("role") != "assistant" or parent not in self._prompts:
            return
        self._unanswered.discard(str(parent))
        message = self._assistants.setdefault(str(info.get("id")), _Assistant())
        time = _dict(info.get("time"))
        message.complete = bool(time.get("completed")) or info.get("error") is not None
        tokens = _dict(info.get("tokens"))
        cache = _dict(tokens.get("cache"))
        message.tokens_in = _int(tokens.get("input")) + _int(cache.get("read"))
        message.tokens_in += _int(cache.get("write"))
        message.tokens_out = _int(tokens.get("output")) + _int(tokens.get("reasoning"))
        cost = info.get("cost")
        message.cost = float(cost) if isinstance(cost, int | float) else 0.0
        message.model = info.get("modelID") if isinstance(info.get("modelID"), str) else None
        error = info.get("error")
        if error is not None:
            self._error(error)

    def _ours(self, message_id: Any) -> bool:
        return isinstance(message_id, str) and message_id in self._assistants

    def _delta(self, props: dict[str, Any], step: Step) -> None:
        if props.get("field") != "text" or not self._ours(props.get("messageID")):
            return
        part = self._parts.setdefault(str(props.get("partID")), _Part("text"))
        delta = props.get("delta")
        if part.kind == "text" and isinstance(delta, str):
            self._emit_text(part, delta, step)

    def _emit_text(self, part: _Part, text: str, step: Step) -> None:
        if not text:
            return
        if not part.text and self._any_text:
            # A later text part (after a tool call, say) reads as a new paragraph.
            step.events.append(TextDelta("\n\n"))
        self._any_text = True
        part.text += text
        step.events.append(TextDelta(text))

    def _part(self, part: Any, step: Step) -> None:
        if not isinstance(part, dict) or not self._ours(part.get("messageID")):
            return
        kind = str(part.get("type"))
        known = self._parts.setdefault(str(part.get("id")), _Part(kind))
        match kind:
            case "text":
                # A full snapshot: send only what the deltas have not (text goes out once).
                text = part.get("text")
                if isinstance(text, str) and text.startswith(known.text):
                    self._emit_text(known, text[len(known.text) :], step)
            case "reasoning":
                ended = isinstance(part.get("time"), dict) and part["time"].get("end")
                text = part.get("text")
                if ended and not known.finished and isinstance(text, str) and text:
                    known.finished = True
                    step.events.append(Reasoning(text))
            case "tool":
                self._tool(known, part, step)
            case "patch":
                if not known.finished:
                    known.finished = True
                    for path in part.get("files") or []:
                        step.events.append(FileChange(str(path), "modify"))

    def _tool(self, known: _Part, part: dict[str, Any], step: Step) -> None:
        state = _dict(part.get("state"))
        status = state.get("status")
        call_id = str(part.get("callID") or part.get("id"))
        name = str(part.get("tool"))
        if status in ("running", "completed", "error") and not known.announced:
            known.announced = True
            step.events.append(ToolCall(call_id, name, state.get("input") or {}))
        if status not in ("completed", "error") or known.finished:
            return
        known.finished = True
        if status == "error":
            step.events.append(ToolResult(call_id, str(state.get("error") or ""), is_error=True))
            return
        step.events.append(ToolResult(call_id, str(state.get("output") or "")))
        step.events.extend(_file_changes(name, state))

    # ----- session-level -----------------------------------------------------------------------

    def _permission(self, props: dict[str, Any], step: Step) -> None:
        """OpenCode asks (its rules say "ask"): the caller decides with `approvals: ask`,
        otherwise nobody can and the request is denied."""
        request_id = str(props.get("id"))
        if self.approvals == "ask":
            request = approval_request(props)
            step.events.append(request)
            step.actions.append(AnswerApproval(request_id, request))
            return
        step.actions.append(
            RejectPermission(
                request_id,
                "Denied: nobody can approve this here (the a2a-wrapper daemon decides by "
                "opencode.permission; set approvals.mode to ask to let the caller decide).",
            )
        )
        step.events.append(Progress(f"Denied permission {props.get('permission')}"))

    def _status(self, status: Any, step: Step) -> None:
        if not isinstance(status, dict) or status.get("type") != "retry":
            return
        attempt = _int(status.get("attempt"))
        message = str(status.get("message") or "model error")
        if self.max_retries is not None and attempt > self.max_retries and not self._aborting:
            self._aborting = True
            # OpenCode retries what the provider refused: a refusal it gave up on.
            self.failure = upstream_failure(
                upstream.classify(message) or "upstream",
                event="opencode.turn.gave_up",
                detail=message,
                sentence=f"The model endpoint keeps failing; gave up after {attempt} attempts."
                " Check the provider (opencode.config) and try again.",
            )
            step.actions.append(AbortTurn(self.failure.message))
            return
        # Not the error's text: a progress note is shown to the caller too.
        step.events.append(Progress(f"Model call failed (attempt {attempt}); OpenCode retries it"))

    def _error(self, error: Any) -> None:
        if self.failure is None and isinstance(error, dict):
            data = _dict(error.get("data"))
            if error.get("name") in _FIXED_MESSAGES:
                # Written for the caller, and nothing more to tell: no error id.
                self.failure = Failed("error", describe_error(error))
                return
            self.failure = safe_failure(
                "error",
                describe_error(error),
                event="opencode.turn.failed",
                detail=str(data.get("message") or ""),
                name=error.get("name"),
                status=data.get("statusCode"),
            )


_FILE_PERMISSIONS = {"edit", "write", "read", "external_directory", "list", "glob", "grep"}


def approval_request(props: dict[str, Any]) -> ApprovalRequest:
    """A `permission.asked` event as the question the caller answers."""
    permission = str(props.get("permission") or "tool")
    patterns = [str(p) for p in props.get("patterns") or []]
    metadata = _dict(props.get("metadata"))
    command = metadata.get("command")
    shown = ", ".join(patterns) or "(no pattern)"
    if permission == "bash" and isinstance(command, str):
        kind: Literal["tool", "command", "file", "other"] = "command"
        summary = f"Run `{command}` in the working directory"
    elif permission == "external_directory":
        kind, summary = "file", f"Access {shown}, outside the working directory"
    elif permission in _FILE_PERMISSIONS:
        kind, summary = "file", f"{permission.capitalize()} {shown}"
    else:
        kind, summary = "tool", f"Use {permission} ({shown})"
    detail: dict[str, Any] = {"permission": permission, "patterns": patterns, "metadata": metadata}
    if props.get("always"):
        detail["always"] = props.get("always")
    return ApprovalRequest(
        request_id=str(props.get("id")), kind=kind, tool=permission, summary=summary, detail=detail
    )


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _file_changes(tool: str, state: dict[str, Any]) -> list[BackendEvent]:
    metadata = _dict(state.get("metadata"))
    tool_input = _dict(state.get("input"))
    path = metadata.get("filepath") or tool_input.get("filePath")
    if not isinstance(path, str):
        return []
    if tool in _WRITE_TOOLS:
        return [FileChange(path, "modify" if metadata.get("exists") else "add")]
    if tool in _EDIT_TOOLS:
        return [FileChange(path, "modify")]
    return []


def describe_error(error: dict[str, Any]) -> str:
    """An OpenCode error (`{name, data}`) as a sentence a caller can act on. The error's own
    message is not in it (an APIError's quotes the endpoint's response body): the mapper logs
    it under the error id the Failed carries."""
    name = str(error.get("name") or "UnknownError")
    data = _dict(error.get("data"))
    status = data.get("statusCode")
    if name == "APIError":
        return _api_error(status)
    if name == "ProviderAuthError":
        provider = _name(data.get("providerID"), "the model provider")
        return (
            f"Missing or invalid credentials for {provider}. Set its API key "
            "(opencode.env or the provider's apiKey in opencode.config) or run "
            "`opencode auth login`."
        )
    fixed = _FIXED_MESSAGES.get(name)
    if fixed is not None:
        return fixed
    return f"OpenCode failed ({_name(name, 'UnknownError')})."


_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def _name(value: Any, otherwise: str) -> str:
    """An identifier the agent sent (a provider id, an error name), shown only if it is one."""
    return value if isinstance(value, str) and _NAME.fullmatch(value) else otherwise


_FIXED_MESSAGES = {
    "ContextOverflowError": "The conversation no longer fits the model's context window; start "
    "a new context (or let OpenCode compact it).",
    "MessageOutputLengthError": "The model's reply hit its output token limit.",
    "MessageAbortedError": "The turn was aborted in OpenCode.",
}


def _api_error(status: Any) -> str:
    if status in (401, 403):
        return (
            f"The model endpoint refused the credentials (HTTP {status}). Check the API key in "
            "opencode.env or the provider's apiKey in opencode.config."
        )
    if status == 429:
        return "The model endpoint is rate limiting or out of quota (HTTP 429)."
    shown = f" (HTTP {status})" if isinstance(status, int) else ""
    return f"The model endpoint returned an error{shown}."
