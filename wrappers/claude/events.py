"""Claude Code's messages (as claude-agent-sdk parses them) -> the daemon's BackendEvents.

`map_message(state, message)` is a pure function: it returns the next state and the events for
one message and touches nothing else, so it is tested on output recorded from the real CLI
(tests/backends/claude/recordings).

What the CLI sends in one turn (measured, 2.1.332): `SystemMessage(init)` with the session id
before the first model call; with partial messages on, `StreamEvent`s carrying the raw Anthropic
SSE events (text deltas); one `AssistantMessage` per content block, after that block streamed;
`UserMessage`s carrying tool results; a `ResultMessage` last. Rules kept here:

- Text is emitted once, as `TextDelta`s while it streams. A text block that arrives whole without
  having streamed (no partial messages for that reply) is emitted once as a single delta. Text
  blocks after the first are separated by a blank line.
- Tool calls become `ToolCall`; their results `ToolResult`; Write/Edit-style tools that succeed
  also become `FileChange`. Thinking becomes `Reasoning` (the core drops it unless asked).
- The synthetic assistant message the CLI makes for an API error carries no answer: the
  `ResultMessage` that follows fails the turn with a message a caller can act on.
- `ResultMessage.usage` counts this turn; `total_cost_usd` counts the whole session (a resumed
  session starts from its earlier total), so the turn's cost is the difference from
  `TurnState.cost_before`, and unknown when that is.
- Subagent traffic (`parent_tool_use_id` set) is not the turn's answer and is skipped.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from claude_agent_sdk import (
    AssistantMessage,
    Message,
    ResultMessage,
    ServerToolUseBlock,
    StreamEvent,
    SystemMessage,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)

from core.backend import (
    BackendEvent,
    Failed,
    FileChange,
    Reasoning,
    SessionBound,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    safe_failure,
    upstream,
    upstream_failure,
)

SYNTHETIC_MODEL = "<synthetic>"
TEXT_SEPARATOR = "\n\n"
TOOL_OUTPUT_LIMIT = 4000
"""Characters of a tool's output kept in a ToolResult event."""

# Tools whose successful result means a file in the workspace changed, and the input key naming it.
FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path"}
NOTEBOOK_TOOLS = {"NotebookEdit": "notebook_path"}


@dataclass(frozen=True)
class TurnState:
    """What the mapping remembers between the messages of one turn."""

    cost_before: float | None = 0.0
    """The session's cumulative cost (USD) before this turn; None when unknown."""
    session_id: str | None = None
    model: str | None = None
    streaming_message: str | None = None
    """The API message id whose SSE events are arriving now."""
    streamed: frozenset[str] = frozenset()
    """API message ids whose text went out as deltas already."""
    text_sent: bool = False
    new_block: bool = False
    """A text block started; the separator is due before its first non-empty delta."""
    tools: Mapping[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    """Tool calls of this turn by id: (name, input)."""
    result: ResultMessage | None = None
    cost_total: float | None = None
    """The session's cumulative cost after this turn, once the result arrived."""
    retry_delay: float | None = None
    """Seconds Claude Code last waited before retrying a refused model call (`api_retry`)."""
    carried: Mapping[str, int] = field(default_factory=dict)
    """Token counts of the CLI's results that ended only a part of the turn (`carry`)."""

    @property
    def finished(self) -> bool:
        return self.result is not None


def map_message(state: TurnState, message: Message) -> tuple[TurnState, list[BackendEvent]]:
    """The events for one message of the turn, and the state the next message sees."""
    match message:
        case SystemMessage(subtype="init" | "api_retry" as subtype, data=data):
            return (_init if subtype == "init" else _api_retry)(state, data)
        case StreamEvent(parent_tool_use_id=None, event=event):
            return _stream_event(state, event)
        case AssistantMessage(parent_tool_use_id=None):
            return _assistant(state, message)
        case UserMessage(parent_tool_use_id=None):
            return _tool_results(state, message)
        case ResultMessage():
            return _result(state, message)
    return state, []


def _init(state: TurnState, data: Mapping[str, Any]) -> tuple[TurnState, list[BackendEvent]]:
    session_id = data.get("session_id")
    model = data.get("model")
    state = dataclasses.replace(
        state, model=state.model or (model if isinstance(model, str) else None)
    )
    if not isinstance(session_id, str) or session_id == state.session_id:
        return state, []
    return dataclasses.replace(state, session_id=session_id), [SessionBound(session_id)]


def _stream_event(
    state: TurnState, event: Mapping[str, Any]
) -> tuple[TurnState, list[BackendEvent]]:
    kind = event.get("type")
    if kind == "message_start":
        message = event.get("message")
        message_id = message.get("id") if isinstance(message, dict) else None
        return dataclasses.replace(state, streaming_message=message_id), []
    if kind == "content_block_start":
        block = event.get("content_block")
        is_text = isinstance(block, dict) and block.get("type") == "text"
        return (dataclasses.replace(state, new_block=True) if is_text else state), []
    if kind == "content_block_delta":
        return _text_delta(state, event.get("delta"))
    return state, []


def _text_delta(state: TurnState, delta: Any) -> tuple[TurnState, list[BackendEvent]]:
    text = (
        delta.get("text") if isinstance(delta, dict) and delta.get("type") == "text_delta" else None
    )
    if not isinstance(text, str) or not text:
        return state, []
    streamed = state.streamed
    if state.streaming_message is not None:
        streamed = streamed | {state.streaming_message}
    return _text(dataclasses.replace(state, streamed=streamed), text)


def _text(state: TurnState, text: str) -> tuple[TurnState, list[BackendEvent]]:
    prefix = TEXT_SEPARATOR if state.new_block and state.text_sent else ""
    next_state = dataclasses.replace(state, text_sent=True, new_block=False)
    return next_state, [TextDelta(prefix + text)]


def _assistant(state: TurnState, message: AssistantMessage) -> tuple[TurnState, list[BackendEvent]]:
    if message.error is not None or message.model == SYNTHETIC_MODEL:
        return state, []
    state = dataclasses.replace(state, model=message.model or state.model)
    events: list[BackendEvent] = []
    for block in message.content:
        match block:
            case TextBlock(text=text) if text and message.message_id not in state.streamed:
                state = dataclasses.replace(state, new_block=True)
                state, more = _text(state, text)
                events += more
            case ThinkingBlock(thinking=thinking) if thinking:
                events.append(Reasoning(thinking))
            case (
                ToolUseBlock(id=call_id, name=name, input=tool_input)
                | ServerToolUseBlock(id=call_id, name=name, input=tool_input)
            ):
                tools = {**state.tools, call_id: (name, tool_input)}
                state = dataclasses.replace(state, tools=tools)
                events.append(ToolCall(call_id=call_id, name=name, input=tool_input))
    return state, events


def _tool_results(state: TurnState, message: UserMessage) -> tuple[TurnState, list[BackendEvent]]:
    if isinstance(message.content, str):
        return state, []
    events: list[BackendEvent] = []
    for block in message.content:
        if not isinstance(block, ToolResultBlock):
            continue
        is_error = bool(block.is_error)
        events.append(ToolResult(block.tool_use_id, _tool_output(block.content), is_error))
        if not is_error:
            change = _file_change(state.tools.get(block.tool_use_id), message.tool_use_result)
            if change is not None:
                events.append(change)
    return state, events


def _tool_output(content: str | list[dict[str, Any]] | None) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        text = content
    else:
        pieces = [
            str(item.get("text", "")) if item.get("type") == "text" else f"[{item.get('type')}]"
            for item in content
        ]
        text = "\n".join(pieces)
    return text if len(text) <= TOOL_OUTPUT_LIMIT else text[:TOOL_OUTPUT_LIMIT] + " [...]"


def _file_change(
    call: tuple[str, Mapping[str, Any]] | None, tool_result: Mapping[str, Any] | None
) -> FileChange | None:
    if call is None:
        return None
    name, tool_input = call
    key = FILE_TOOLS.get(name) or NOTEBOOK_TOOLS.get(name)
    path = tool_input.get(key) if key else None
    if not isinstance(path, str):
        return None
    created = isinstance(tool_result, Mapping) and tool_result.get("type") == "create"
    kind: Literal["add", "modify"] = "add" if created else "modify"
    return FileChange(path=path, kind=kind)


USAGE_KEYS = (
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
)


def carry(state: TurnState, result: ResultMessage) -> TurnState:
    """A result that ended only a part of the turn (the CLI goes on with a steered message as
    its next turn): no events; its tokens count in the turn's Usage, and its cost is in the
    session total the final result reports."""
    usage = result.usage or {}
    carried = {k: state.carried.get(k, 0) + _tokens(usage, k) for k in USAGE_KEYS}
    return dataclasses.replace(state, carried=carried)


def _result(state: TurnState, result: ResultMessage) -> tuple[TurnState, list[BackendEvent]]:
    events: list[BackendEvent] = []
    total = result.total_cost_usd
    before = state.cost_before
    cost = max(0.0, total - before) if total is not None and before is not None else None
    usage = {k: _tokens(result.usage or {}, k) + state.carried.get(k, 0) for k in USAGE_KEYS}
    events.append(
        Usage(
            input_tokens=_tokens(usage, "input_tokens")
            + _tokens(usage, "cache_creation_input_tokens")
            + _tokens(usage, "cache_read_input_tokens"),
            output_tokens=_tokens(usage, "output_tokens"),
            cost_usd=round(cost, 6) if cost is not None else None,
            model=state.model,
            cache_read_tokens=_tokens(usage, "cache_read_input_tokens"),
            cache_creation_tokens=_tokens(usage, "cache_creation_input_tokens"),
        )
    )
    failed = result.is_error or result.subtype != "success"
    if failed:
        events.append(failure(result, state.retry_delay))
    elif not state.text_sent and result.result:
        events.append(TextDelta(result.result))
    final = dataclasses.replace(state, result=result, cost_total=total, text_sent=True)
    return final, events


def _tokens(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) else 0


DETAIL_LIMIT = 300

CREDENTIALS_HINT = (
    "set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN) in the daemon's environment or in "
    "claude.env, or log in once with `claude /login` (a subscription without a browser: "
    "`claude setup-token`, then CLAUDE_CODE_OAUTH_TOKEN)"
)


_SUBTYPE_ADVICE = {
    "error_max_turns": "The agent used every step claude.maxTurns allows and stopped before "
    "finishing; send a follow-up to let it continue, or raise claude.maxTurns.",
    "error_max_budget_usd": "The turn's cost reached claude.maxBudgetUsd and the agent stopped; "
    "send a follow-up to continue, or raise the budget.",
}
_INTERRUPTED = "The turn was interrupted before it finished."
_STATUS_KINDS: dict[int, upstream.UpstreamKind] = {401: "auth", 429: "rateLimit", 529: "upstream"}
_STATUS_ADVICE = {
    401: f"The model endpoint rejected the credentials (HTTP 401): {CREDENTIALS_HINT}.",
    403: "The model endpoint refused access (HTTP 403): check the key's permissions.",
    429: "The model endpoint's rate limit or usage quota was reached (HTTP 429); wait and send "
    "the message again, or raise the quota.",
    529: "The model endpoint is overloaded (HTTP 529); send the message again later, or set "
    "claude.fallbackModel.",
}
_CONTEXT_FULL = (
    "The conversation no longer fits in the model's context window; continue in a new context "
    "(a new contextId)."
)


def _api_retry(state: TurnState, data: Mapping[str, Any]) -> tuple[TurnState, list[BackendEvent]]:
    """Claude Code retries a refused model call. Refused credentials stay refused, and its
    retries would hold the turn for minutes: the turn ends at once. Otherwise the delay it
    chose (the provider's retry-after) is what a failure after the last retry reports."""
    delay = data.get("retry_delay_ms")
    if isinstance(delay, int | float):
        state = dataclasses.replace(state, retry_delay=round(delay / 1000, 3))
    if data.get("error") in ("authentication_failed", "oauth_org_not_allowed") or (
        data.get("error_status") == 401
    ):
        detail = json.dumps(data)[:DETAIL_LIMIT]
        return state, [upstream_failure("auth", event="claude.turn.refused", detail=detail)]
    return state, []


def failure(result: ResultMessage, retry_delay: float | None = None) -> Failed:
    """The Failed event for a result that ended the turn in error. Claude Code's own words
    (which may quote the endpoint's response) go to the log under the message's error id; a
    reason that needs no words of theirs (a limit reached, an interrupt) is shown as it is."""
    if result.subtype in _SUBTYPE_ADVICE:
        return Failed("error", _SUBTYPE_ADVICE[result.subtype])
    if result.terminal_reason in ("aborted_streaming", "aborted_tools"):
        return Failed("error", _INTERRUPTED)
    detail = _detail(result)
    kind = upstream.classify(detail) or _STATUS_KINDS.get(result.api_error_status or 0)
    if kind is not None:
        retry = retry_delay if kind == "rateLimit" else None
        return upstream_failure(
            kind,
            event="claude.turn.failed",
            detail=detail,
            retry_after=retry,
            sentence=failure_message(result),
            api_error_status=result.api_error_status,
        )
    return safe_failure(
        "error",
        failure_message(result),
        event="claude.turn.failed",
        detail=_detail(result),
        api_error_status=result.api_error_status,
    )


def failure_message(result: ResultMessage) -> str:
    """A sentence a caller can act on, for a result that ended the turn in error (without
    Claude Code's own words: see `failure`)."""
    if result.subtype in _SUBTYPE_ADVICE:
        return _SUBTYPE_ADVICE[result.subtype]
    if result.terminal_reason in ("aborted_streaming", "aborted_tools"):
        return _INTERRUPTED
    detail = _detail(result)
    lowered = detail.lower()
    status = result.api_error_status
    if status is None and "invalid api key" in lowered:
        status = 401
    if status is None and "not logged in" in lowered:
        advice = f"Claude Code has no credentials for the model endpoint: {CREDENTIALS_HINT}."
    elif "prompt is too long" in lowered or "context window" in lowered:
        advice = _CONTEXT_FULL
    elif status in _STATUS_ADVICE:
        advice = _STATUS_ADVICE[status]
    elif status is not None and status >= 500:
        advice = (
            f"The model endpoint failed (HTTP {status}); this is usually temporary, send the "
            "message again."
        )
    elif status is not None:
        advice = f"The model endpoint answered HTTP {status}."
    else:
        advice = "Claude Code could not finish the turn."
    return advice


def _detail(result: ResultMessage) -> str:
    errors = [e for e in (result.errors or []) if isinstance(e, str) and e.strip()]
    text = "; ".join(errors) or (result.result or "").strip()
    text = " ".join(text.split())
    return text if len(text) <= DETAIL_LIMIT else text[: DETAIL_LIMIT - 3] + "..."
