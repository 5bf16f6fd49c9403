"""The SDK's streamed steps as our events: a pure mapping, fed one step at a time.

What google-antigravity 0.1.22 streams for one turn (tests/backends/antigravity/recordings):
the user's own step (source USER), then per model reply a TEXT_RESPONSE step seen several
times while ACTIVE (`content_delta` is the new text; `content` all of it so far) and once DONE;
a tool call is a TOOL_CALL step seen while ACTIVE (the call's `args`) and once DONE or ERROR
(its `args` then also carry the result: `exit_code`, `combined_output`, ...); a file write is
reported as `edit_file` with `file_path` and a diff, whatever the model called. A failed model
call is a SYSTEM step with status ERROR; the agent may recover from it in a later model reply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from google.antigravity import types
from google.antigravity.connections.local.local_connection_config import normalize_wire_path

from core.backend import (
    BackendEvent,
    FileChange,
    Reasoning,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
    safe_failure,
)
from wrappers.antigravity.options import FILE_WRITE_TOOLS

_DONE = (types.StepStatus.DONE, types.StepStatus.ERROR, types.StepStatus.CANCELED)


@dataclass
class StepMapper:
    """One turn's mapping state: the calls seen and ended, and a model error not yet recovered
    from."""

    model: str | None = None
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)
    ended: set[str] = field(default_factory=set)
    error: str | None = None
    text_step: str | None = None
    """The step whose text came last."""

    def feed(self, step: Any) -> list[BackendEvent]:
        if step.source == types.StepSource.USER:
            return []
        if step.status == types.StepStatus.ERROR and step.source == types.StepSource.SYSTEM:
            self.error = step.error or step.content or "system error"
            return []
        if step.tool_calls:
            return self._tools(step)
        if step.source != types.StepSource.MODEL or step.depth or step.parent_trajectory_id:
            return []  # subagents' own replies are theirs; their tool calls show above
        events: list[BackendEvent] = []
        if step.content_delta:
            # The text of two model replies in one turn (around a tool call) is two paragraphs.
            gap = "\n\n" if self.text_step not in (None, step.id) else ""
            self.text_step = step.id
            events.append(TextDelta(gap + step.content_delta))
        if step.status == types.StepStatus.DONE and step.thinking:
            events.append(Reasoning(step.thinking))
        if step.is_complete_response and step.status == types.StepStatus.DONE:
            self.error = None  # the agent answered after all
        return events

    def _tools(self, step: Any) -> list[BackendEvent]:
        events: list[BackendEvent] = []
        for call in step.tool_calls:
            call_id = str(call.id or step.id)
            name = str(call.name)
            args = dict(call.args or {})
            if call_id not in self.calls:
                self.calls[call_id] = args
                events.append(ToolCall(call_id, name, args))
            if step.status in _DONE and call_id not in self.ended:
                self.ended.add(call_id)
                failed = step.status != types.StepStatus.DONE or _exit_code(args) not in (None, 0)
                events.append(ToolResult(call_id, _output(self.calls[call_id], args, step), failed))
                if not failed and (change := _file_change(name, self.calls[call_id])):
                    events.append(change)
        return events

    def finish(self, error: BaseException | None, usage: Any) -> list[BackendEvent]:
        """The turn's last events: its usage, and a failure if it ended in one."""
        events: list[BackendEvent] = []
        if usage is not None and (usage.total_token_count or 0) > 0:
            events.append(
                Usage(
                    int(usage.prompt_token_count or 0),
                    int(usage.candidates_token_count or 0),
                    model=self.model,
                )
            )
        if isinstance(error, types.AntigravityConnectionError):
            events.append(
                safe_failure(
                    "error",
                    "The model endpoint refused the request; check antigravity.endpoint and "
                    "its key.",
                    event="antigravity.endpoint_refused",
                    exc=error,
                )
            )
        elif error is not None:
            events.append(
                safe_failure(
                    "error",
                    "The Antigravity agent failed the turn.",
                    event="antigravity.turn_failed",
                    exc=error,
                )
            )
        elif self.error is not None:
            events.append(
                safe_failure(
                    "error",
                    "The model endpoint failed the turn.",
                    event="antigravity.model_error",
                    detail=self.error,
                )
            )
        return events


def _exit_code(args: dict[str, Any]) -> int | None:
    """run_command's exit code (the SDK gives it as a string), None for other tools."""
    try:
        return int(args["exit_code"])
    except (KeyError, TypeError, ValueError):
        return None


def _output(before: dict[str, Any], after: dict[str, Any], step: Any) -> str:
    """What a finished call returned: the keys its args gained (run_command's
    `combined_output` as plain text), else the step's error or content."""
    if isinstance(after.get("combined_output"), str):
        return str(after["combined_output"])
    added = {k: v for k, v in after.items() if k not in before}
    if added:
        return json.dumps(added, default=str)
    return str(step.error or step.content or "")


def _file_change(name: str, args: dict[str, Any]) -> FileChange | None:
    if name not in FILE_WRITE_TOOLS:
        return None
    path = args.get("TargetFile") or args.get("path") or args.get("file_path")
    if not isinstance(path, str) or not path:
        return None
    creates = name in ("write_to_file", "create_file") and not args.get("Overwrite")
    return FileChange(normalize_wire_path(path), "add" if creates else "modify")
