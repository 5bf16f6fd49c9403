"""From app-server notifications to BackendEvents: a pure function over an immutable state.

    state = TurnState(turn_id, model)
    for note in notifications:
        state, events = map_notification(state, note.method, note.params)

Rules:
- text streams as `TextDelta`s from `item/agentMessage/delta`; a message that arrives whole
  (no deltas seen) becomes one `TextDelta` at `item/completed`. Text is never sent twice, and a
  second message of the turn is separated from the first by a blank line;
- commands, MCP and dynamic tool calls, web searches and patches become `ToolCall` /
  `ToolResult`, applied patches `FileChange`s; reasoning becomes `Reasoning` (the core shows it
  only when asked to);
- `turn/completed` ends the turn (`state.done`): `Usage`, then `Failed` if the turn failed.
  Usage in `thread/tokenUsage/updated` is cumulative per thread (and after a resume includes
  earlier turns), so this turn's usage is the last total minus the total before its first
  request (first total - first `last`);
- notifications of other turns are ignored.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

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
TOOL_OUTPUT_LIMIT = 4000


@dataclass(frozen=True)
class Tokens:
    input: int
    output: int

    @classmethod
    def of(cls, breakdown: Any) -> Tokens | None:
        if not isinstance(breakdown, dict):
            return None
        return cls(int(breakdown.get("inputTokens") or 0), int(breakdown.get("outputTokens") or 0))

    def __sub__(self, other: Tokens) -> Tokens:
        return Tokens(self.input - other.input, self.output - other.output)


@dataclass(frozen=True)
class TurnState:
    turn_id: str
    model: str | None = None
    messages: int = 0
    streamed: frozenset[str] = field(default_factory=frozenset)
    usage_before: Tokens | None = None
    usage_total: Tokens | None = None
    done: bool = False


Mapped = tuple[TurnState, tuple[BackendEvent, ...]]


def map_notification(state: TurnState, method: str, params: Mapping[str, Any]) -> Mapped:
    """One notification of this turn's thread -> the new state and the events it means."""
    turn_id = params.get("turnId")
    if isinstance(turn_id, str) and turn_id != state.turn_id:
        return state, ()
    handler = _HANDLERS.get(method)
    return handler(state, params) if handler is not None else (state, ())


def _item(params: Mapping[str, Any]) -> dict[str, Any]:
    item = params.get("item")
    return item if isinstance(item, dict) else {}


def _on_delta(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    item_id, text = str(params.get("itemId", "")), str(params.get("delta", ""))
    if not text:
        return state, ()
    if item_id in state.streamed:
        return state, (TextDelta(text),)
    prefix = MESSAGE_SEPARATOR if state.messages else ""
    state = replace(state, messages=state.messages + 1, streamed=state.streamed | {item_id})
    return state, (TextDelta(prefix + text),)


def _on_item_started(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    item = _item(params)
    call_id = str(item.get("id", ""))
    call: ToolCall | None = None
    match item.get("type"):
        case "commandExecution":
            command = {"command": item.get("command"), "cwd": item.get("cwd")}
            call = ToolCall(call_id, "shell", command)
        case "mcpToolCall":
            call = ToolCall(
                call_id, f"{item.get('server')}.{item.get('tool')}", item.get("arguments")
            )
        case "dynamicToolCall":
            call = ToolCall(call_id, str(item.get("tool")), item.get("arguments"))
        case "webSearch":
            call = ToolCall(call_id, "web_search", {"query": item.get("query")})
        case "fileChange":
            paths = [c.get("path") for c in item.get("changes") or [] if isinstance(c, dict)]
            call = ToolCall(call_id, "apply_patch", {"paths": paths})
    return state, ((call,) if call is not None else ())


def _on_item_completed(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    item = _item(params)
    if item.get("type") == "agentMessage":
        text = str(item.get("text") or "")
        if str(item.get("id", "")) in state.streamed or not text:
            return state, ()
        prefix = MESSAGE_SEPARATOR if state.messages else ""
        return replace(state, messages=state.messages + 1), (TextDelta(prefix + text),)
    finish = _FINISHED_ITEMS.get(str(item.get("type")))
    return state, (tuple(finish(item)) if finish is not None else ())


def _reasoning_done(item: dict[str, Any]) -> list[BackendEvent]:
    parts = [str(p) for p in [*(item.get("summary") or []), *(item.get("content") or [])]]
    text = "\n".join(p for p in parts if p)
    return [Reasoning(text)] if text else []


def _command_done(item: dict[str, Any]) -> list[BackendEvent]:
    status = item.get("status")
    failed = status != "completed" or item.get("exitCode") not in (0, None)
    output = str(item.get("aggregatedOutput") or "")
    if status == "declined":
        output = output or "declined: the sandbox or approval policy does not allow it"
    code = item.get("exitCode")
    exit_code = code if isinstance(code, int) else None
    return [ToolResult(str(item.get("id", "")), _clip(output), failed, exit_code)]


def _mcp_done(item: dict[str, Any]) -> list[BackendEvent]:
    call_id, error = str(item.get("id", "")), item.get("error")
    if isinstance(error, dict) or item.get("status") == "failed":
        message = error.get("message") if isinstance(error, dict) else "failed"
        return [ToolResult(call_id, str(message), is_error=True)]
    return [ToolResult(call_id, _clip(_mcp_text(item.get("result"))))]


def _dynamic_done(item: dict[str, Any]) -> list[BackendEvent]:
    ok = item.get("status") == "completed" and item.get("success") is not False
    text = _mcp_text({"content": item.get("contentItems") or []})
    return [ToolResult(str(item.get("id", "")), _clip(text), is_error=not ok)]


def _search_done(item: dict[str, Any]) -> list[BackendEvent]:
    return [ToolResult(str(item.get("id", "")), "")]


def _patch_done(item: dict[str, Any]) -> list[BackendEvent]:
    status = item.get("status")
    if status != "completed":
        return [ToolResult(str(item.get("id", "")), f"patch {status}", is_error=True)]
    return _file_changes(item)


_FINISHED_ITEMS: dict[str, Callable[[dict[str, Any]], list[BackendEvent]]] = {
    "reasoning": _reasoning_done,
    "commandExecution": _command_done,
    "mcpToolCall": _mcp_done,
    "dynamicToolCall": _dynamic_done,
    "webSearch": _search_done,
    "fileChange": _patch_done,
}


def _file_changes(item: dict[str, Any]) -> list[BackendEvent]:
    events: list[BackendEvent] = [ToolResult(str(item.get("id", "")), "applied")]
    for change in item.get("changes") or []:
        if not isinstance(change, dict):
            continue
        kind = change.get("kind")
        kind_type = kind.get("type") if isinstance(kind, dict) else kind
        mapped: Literal["add", "modify", "delete"] = (
            "add" if kind_type == "add" else "delete" if kind_type == "delete" else "modify"
        )
        events.append(FileChange(str(change.get("path", "")), mapped))
    return events


def _mcp_text(result: Any) -> str:
    if not isinstance(result, dict):
        return ""
    texts = [
        str(part.get("text", ""))
        for part in result.get("content") or []
        if isinstance(part, dict) and "text" in part
    ]
    if texts:
        return "\n".join(texts)
    structured = result.get("structuredContent")
    return json.dumps(structured) if structured is not None else ""


def _clip(text: str) -> str:
    if len(text) <= TOOL_OUTPUT_LIMIT:
        return text
    return text[:TOOL_OUTPUT_LIMIT] + f"\n[... {len(text) - TOOL_OUTPUT_LIMIT} more characters]"


def _on_usage(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    return _usage(state, params.get("tokenUsage")), ()


def _usage(state: TurnState, usage: Any) -> TurnState:
    if not isinstance(usage, dict):
        return state
    total, last = Tokens.of(usage.get("total")), Tokens.of(usage.get("last"))
    if total is None:
        return state
    before = state.usage_before
    if before is None:
        before = total - last if last is not None else total
    return replace(state, usage_before=before, usage_total=total)


def _on_error(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    """A retried model error is progress worth showing; a final one arrives again with the
    failed `turn/completed`, which reports it."""
    error = params.get("error")
    if params.get("willRetry") and isinstance(error, dict):
        # Not the error's text (it may quote the endpoint's body): a note is shown to the caller.
        return state, (Progress("Model request failed; Codex retries it"),)
    return state, ()


def _on_warning(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    message = params.get("message")
    return state, ((Progress(f"Codex warns: {message}"),) if message else ())


def _on_turn_completed(state: TurnState, params: Mapping[str, Any]) -> Mapped:
    turn = params.get("turn")
    if not isinstance(turn, dict) or turn.get("id") != state.turn_id:
        return state, ()
    return replace(state, done=True), _completed(state, turn)


_HANDLERS: dict[str, Callable[[TurnState, Mapping[str, Any]], Mapped]] = {
    "item/agentMessage/delta": _on_delta,
    "item/started": _on_item_started,
    "item/completed": _on_item_completed,
    "thread/tokenUsage/updated": _on_usage,
    "error": _on_error,
    "warning": _on_warning,
    "turn/completed": _on_turn_completed,
}


def _completed(state: TurnState, turn: dict[str, Any]) -> tuple[BackendEvent, ...]:
    events: list[BackendEvent] = []
    if state.usage_total is not None and state.usage_before is not None:
        used = state.usage_total - state.usage_before
        events.append(Usage(input_tokens=used.input, output_tokens=used.output, model=state.model))
    status = turn.get("status")
    if status == "failed":
        error = turn.get("error")
        error = error if isinstance(error, dict) else {}
        events.append(
            safe_failure(
                "error",
                describe_error(error),
                event="codex.turn.failed",
                # Codex's kind of error (`usageLimitExceeded`, `unauthorized`, an HTTP status)
                # names the provider's refusal beside its words.
                detail=f"{error.get('message') or ''} {json.dumps(error.get('codexErrorInfo'))}",
                codex_error_info=error.get("codexErrorInfo"),
            )
        )
    elif status == "interrupted":
        events.append(Failed("error", "Codex interrupted the turn before it finished."))
    return tuple(events)


def http_status(info: Any) -> int | None:
    """The upstream HTTP status inside a `codexErrorInfo`, when Codex forwards one."""
    if not isinstance(info, dict):
        return None
    for detail in info.values():
        if isinstance(detail, dict) and isinstance(detail.get("httpStatusCode"), int):
            return int(detail["httpStatusCode"])
    return None


def describe_error(error: Mapping[str, Any]) -> str:
    """A failed turn's error as a sentence the caller can act on. Codex's own words are not in
    it (they may quote the endpoint's response body): the caller logs them under an error id."""
    message = str(error.get("message") or "").strip()
    info = error.get("codexErrorInfo")
    kind = info if isinstance(info, str) else None
    status = http_status(info)
    if message.startswith("Missing environment variable"):
        # A variable's name is not a secret, and it is what the operator must set.
        name = _ENV_NAME.search(message)
        variable = f" {name.group(0)}" if name else ""
        return (
            f"Codex has no API key: the environment variable{variable} is not set. Set it in "
            "the daemon's environment or in codex.env."
        )
    if kind == "unauthorized" or status in (401, 403):
        return (
            f"The model endpoint refused the credentials (HTTP {status or 401}). Check the API "
            "key Codex sends (OPENAI_API_KEY, or the env_key of the configured model provider) "
            "or run `codex login`."
        )
    for matches, template in _ERROR_RULES:
        if matches(kind, status):
            return template.format(http=f" (HTTP {status})" if status else "")
    return "Codex could not finish the turn."


_ENV_NAME = re.compile(r"\b[A-Z][A-Z0-9_]{2,}\b")


_ERROR_RULES: list[tuple[Callable[[str | None, int | None], bool], str]] = [
    (
        lambda kind, _: kind == "usageLimitExceeded",
        "The account's usage limit or quota is used up.",
    ),
    (
        lambda kind, status: kind == "rateLimitExceeded" or status == 429,
        "The model endpoint is rate limiting requests{http}. Retry later.",
    ),
    (
        lambda kind, _: kind == "contextWindowExceeded",
        "The conversation no longer fits the model's context window. "
        "Start a new conversation (a new contextId).",
    ),
    (
        lambda kind, status: (
            kind in ("internalServerError", "serverOverloaded") or (status or 0) >= 500
        ),
        "The model endpoint failed{http}. Retry later.",
    ),
    (
        lambda kind, status: kind == "badRequest" or status is not None,
        "The model endpoint rejected the request{http}.",
    ),
]
