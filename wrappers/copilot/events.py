"""From Copilot session events to `BackendEvent`s: a pure fold over one turn's events.

`map_event(state, event)` returns the next state and the events to emit; it does no I/O, so the
tests feed it events recorded from the real CLI (tests/backends/copilot/fixtures/). Rules:

- The answer is emitted once, as `TextDelta`s: streamed deltas as they come, and the full text
  of an `assistant.message` only when none of it was streamed (a non-streaming session). Two
  messages with text in one turn (text, tool call, more text) are joined by a blank line.
- Tool starts and ends become `ToolCall` / `ToolResult`; files a tool committed become
  `FileChange`s; a retried model call becomes a `Progress` note.
- Token counts add up over the turn's model calls; each `assistant.usage` emits the running
  total. Copilot's `cost` counts premium requests, not dollars, so `cost_usd` stays unset.
- `session.error` is remembered, not emitted: the turn is over only at the root `session.idle`,
  which then emits the `Failed` (so the consumer never stops reading a turn still running).
- Events of sub-agents (`agent_id` set) are not the answer and never end the turn.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from copilot.session_events import (
    AssistantMessageData,
    AssistantMessageDeltaData,
    AssistantReasoningData,
    AssistantTurnRetryData,
    AssistantUsageData,
    SessionErrorData,
    SessionEvent,
    SessionIdleData,
    ToolExecutionCompleteData,
    ToolExecutionStartData,
)

from core.backend import (
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
)

MESSAGE_SEPARATOR = "\n\n"

_EDIT_KIND: dict[str, Literal["add", "modify", "delete"]] = {
    "create": "add",
    "edit": "modify",
    "delete": "delete",
}


@dataclass(frozen=True)
class TurnState:
    """What the fold remembers within one turn."""

    streamed: frozenset[str] = frozenset()
    last_text_message: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    model: str | None = None
    error: Failed | None = None
    finished: bool = False
    aborted: bool = False


Step = tuple[TurnState, tuple[BackendEvent, ...]]


def map_event(state: TurnState, event: SessionEvent) -> Step:
    """Fold one session event into the turn; see the module docstring for the rules."""
    if state.finished or event.agent_id:
        return state, ()
    emitted: tuple[BackendEvent, ...] = ()
    match event.data:
        case AssistantMessageDeltaData(delta_content=text, message_id=message_id):
            state = replace(state, streamed=state.streamed | {message_id})
            state, emitted = _text(state, message_id, text)
        case AssistantMessageData(content=text, message_id=message_id):
            if message_id not in state.streamed:
                state, emitted = _text(state, message_id, text)
        case AssistantReasoningData(content=text) if text:
            emitted = (Reasoning(text),)
        case AssistantUsageData() as usage:
            state, emitted = _usage(state, usage)
        case ToolExecutionStartData(tool_call_id=call_id, tool_name=name, arguments=arguments):
            emitted = (ToolCall(call_id, name, arguments),)
        case ToolExecutionCompleteData() as done:
            emitted = _tool_done(done)
        case AssistantTurnRetryData():
            # Not the reason's text: a progress note is shown to the caller too.
            emitted = (Progress("The model call failed; Copilot retries it"),)
        case SessionErrorData() as error:
            failed = safe_failure(
                "error",
                describe_error(error),
                event="copilot.turn.failed",
                detail=error.message,
                status=error.status_code,
                error_type=error.error_type,
            )
            state = replace(state, error=failed)
        case SessionIdleData(aborted=aborted):
            state, emitted = _idle(state, aborted=bool(aborted))
    return state, emitted


def map_events(events: list[SessionEvent], state: TurnState | None = None) -> Step:
    """Fold a whole sequence (tests and replays)."""
    state = state or TurnState()
    out: list[BackendEvent] = []
    for event in events:
        state, emitted = map_event(state, event)
        out.extend(emitted)
    return state, tuple(out)


def _text(state: TurnState, message_id: str, text: str) -> Step:
    if not text:
        return state, ()
    if state.last_text_message not in (None, message_id):
        text = MESSAGE_SEPARATOR + text
    return replace(state, last_text_message=message_id), (TextDelta(text),)


def _usage(state: TurnState, usage: AssistantUsageData) -> Step:
    state = replace(
        state,
        input_tokens=state.input_tokens + (usage.input_tokens or 0),
        output_tokens=state.output_tokens + (usage.output_tokens or 0),
        model=usage.model or state.model,
    )
    return state, (Usage(state.input_tokens, state.output_tokens, None, state.model),)


def _tool_done(done: ToolExecutionCompleteData) -> tuple[BackendEvent, ...]:
    if done.success:
        output = done.result.content if done.result is not None else ""
    else:
        output = done.error.message if done.error is not None else "the tool call failed"
    events: list[BackendEvent] = [ToolResult(done.tool_call_id, output, is_error=not done.success)]
    for edit in done.file_edits or ():
        kind = _EDIT_KIND.get(edit.kind.value if edit.kind is not None else "", "modify")
        events.append(FileChange(edit.path, kind))
    return tuple(events)


def _idle(state: TurnState, *, aborted: bool) -> Step:
    state = replace(state, finished=True, aborted=aborted)
    if state.error is not None:
        return state, (state.error,)
    if aborted:
        return state, (Failed("error", "The Copilot session aborted the turn."),)
    return state, ()


_MISSING_LOGIN = ("no github oauth token", "no authentication information", "not authenticated")


def describe_error(error: SessionErrorData) -> str:
    """A sentence a caller can act on. Copilot's own words (which may quote the endpoint's
    response) and the stack the event may carry are not in it: they go to the log."""
    status = error.status_code
    detail = error.message.strip()
    kind = (error.error_type or "").lower()
    lowered = detail.lower()
    if any(marker in lowered for marker in _MISSING_LOGIN):
        advice = (
            "No GitHub credentials for Copilot: set copilot.githubToken (or COPILOT_GITHUB_TOKEN,"
            " GH_TOKEN, GITHUB_TOKEN), run `copilot login` as the daemon's user, or point "
            "copilot.provider at a model endpoint (BYOK)."
        )
    elif status in (401, 403) or kind == "authentication":
        advice = (
            f"The model endpoint rejected the credentials (HTTP {status or 401}): check "
            "copilot.provider.apiKey for a BYOK endpoint, or copilot.githubToken / "
            "`copilot login` for GitHub Copilot."
        )
    elif status == 429 or kind in ("rate_limit", "quota"):
        advice = (
            f"The model endpoint's rate limit or quota was hit (HTTP {status or 429}); "
            "try again later."
        )
    elif kind in ("context_length", "context_window") or (
        "context" in lowered and ("length" in lowered or "too long" in lowered)
    ):
        advice = "The conversation no longer fits the model's context window; start a new context."
    elif status is not None and status >= 500:
        advice = f"The model endpoint failed (HTTP {status})."
    elif status is not None:
        advice = f"The model endpoint refused the request (HTTP {status})."
    else:
        advice = "The Copilot agent failed."
    return advice
