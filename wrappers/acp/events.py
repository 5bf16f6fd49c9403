"""From ACP `session/update` notifications to `BackendEvent`s: a pure mapping, no I/O.

- `agent_message_chunk` text -> `TextDelta` (the answer, streamed as it comes);
  `agent_thought_chunk` -> `Reasoning`.
- `tool_call` -> `ToolCall` (its title as the name when the agent gives no kind, the raw input
  when it sends one); a `tool_call_update` that reaches `completed` or `failed` ->
  `ToolResult` with the text of its content (or its raw output). Each `diff` a tool call
  carries -> `FileChange` (`add` when there was no old text), once per call and path.
- `plan` -> `Progress` listing the entries and their status.
- Everything else (user message replays, available commands, mode and config changes, session
  info, context-window usage) is not part of the answer.
- Notices (`notices`, a preset's quirk): an agent that reports its own status as message text
  (Copilot CLI's "Info: ... Retrying..." and "Error: ..." lines) sends each as one whole chunk
  at the start of a message; such a chunk becomes a `Progress` note (info) or the turn's
  `error` (never emitted as text: it may quote the model endpoint's response body).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from acp.schema import (
    AgentMessageChunk,
    AgentPlanUpdate,
    AgentThoughtChunk,
    ContentToolCallContent,
    FileEditToolCallContent,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
)

from core.backend import (
    BackendEvent,
    FileChange,
    Progress,
    Reasoning,
    TextDelta,
    ToolCall,
    ToolResult,
)

_TOOL_OUTPUT_LIMIT = 4000


@dataclass
class TurnUpdates:
    """What the mapping remembers within one turn (which tool calls and diffs were seen)."""

    notices: re.Pattern[str] | None = None
    calls: dict[str, str] = field(default_factory=dict)  # tool call id -> name
    finished: set[str] = field(default_factory=set)
    changed: set[tuple[str, str]] = field(default_factory=set)  # (tool call id, path)
    error: str | None = None
    """The agent's own error notice, when it reported one (the turn failed)."""
    _in_message: bool = False

    def map(self, update: Any) -> list[BackendEvent]:
        """The events of one `session/update` payload (the `update` of the notification)."""
        was_in_message, self._in_message = self._in_message, isinstance(update, AgentMessageChunk)
        match update:
            case AgentMessageChunk(content=TextContentBlock(text=text)) if text:
                return self._message(text, was_in_message)
            case AgentThoughtChunk(content=TextContentBlock(text=text)) if text:
                return [Reasoning(text)]
            case ToolCallStart():
                return self._started(update)
            case ToolCallProgress():
                return self._progressed(update)
            case AgentPlanUpdate(entries=entries) if entries:
                lines = [f"- [{e.status}] {e.content}" for e in entries]
                return [Progress("Plan:\n" + "\n".join(lines))]
        return []

    def _message(self, text: str, was_in_message: bool) -> list[BackendEvent]:
        notice = None if was_in_message or self.notices is None else self.notices.match(text)
        if notice is None:
            return [TextDelta(text)]
        self._in_message = False
        if notice.group("level") == "Error":
            self.error = text
            return []
        return [Progress("The agent's model request failed; it retries.")]

    def _started(self, update: ToolCallStart) -> list[BackendEvent]:
        name = update.kind if update.kind and update.kind != "other" else update.title
        self.calls[update.tool_call_id] = name
        events: list[BackendEvent] = [
            ToolCall(update.tool_call_id, name, update.raw_input or {"title": update.title})
        ]
        events += self._diffs(update.tool_call_id, update.content)
        if update.status in ("completed", "failed"):
            events += self._result(
                update.tool_call_id, update.status, update.content, update.raw_output
            )
        return events

    def _progressed(self, update: ToolCallProgress) -> list[BackendEvent]:
        call_id = update.tool_call_id
        events: list[BackendEvent] = []
        if call_id not in self.calls:
            # An update of a call this turn never saw start (a replay): announce it once.
            self.calls[call_id] = update.kind or update.title or "tool"
            raw = update.raw_input or {"title": update.title}
            events.append(ToolCall(call_id, self.calls[call_id], raw))
        events += self._diffs(call_id, update.content)
        if update.status in ("completed", "failed"):
            events += self._result(call_id, update.status, update.content, update.raw_output)
        return events

    def _diffs(self, call_id: str, content: list[Any] | None) -> list[BackendEvent]:
        events: list[BackendEvent] = []
        for item in content or []:
            if (
                isinstance(item, FileEditToolCallContent)
                and (call_id, item.path) not in self.changed
            ):
                self.changed.add((call_id, item.path))
                events.append(FileChange(item.path, "add" if item.old_text is None else "modify"))
        return events

    def _result(
        self, call_id: str, status: str, content: list[Any] | None, raw_output: Any
    ) -> list[BackendEvent]:
        if call_id in self.finished:
            return []
        self.finished.add(call_id)
        texts = [
            item.content.text
            for item in content or []
            if isinstance(item, ContentToolCallContent)
            and isinstance(item.content, TextContentBlock)
        ]
        output = "\n".join(texts) if texts else _raw_text(raw_output)
        return [ToolResult(call_id, output[:_TOOL_OUTPUT_LIMIT], is_error=status == "failed")]


def _raw_text(raw: Any) -> str:
    if raw is None:
        return ""
    if isinstance(raw, str):
        return raw
    try:
        return json.dumps(raw)
    except (TypeError, ValueError):
        return str(raw)
