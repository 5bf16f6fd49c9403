"""Permission questions to the caller (`approvals.mode: ask`): Claude Code's `can_use_tool`
callback, turned into `ApprovalRequest` events of the running turn.

Claude Code consults the callback only for what its own rules leave open (measured, 2.1.332):
`permissionMode`, `allowedTools` and `disallowedTools` decide first. With `acceptEdits`, edits
inside the working directory and read-only commands (`echo`, `ls`, ...) run without a question,
while other commands (`python3 ...`, `git init`, ...) reach the callback; with `dontAsk` nothing
does (everything not allowed is denied); with `plan` commands do.

The callback runs in the SDK's reader, not in the turn's consumer: it puts the question into the
turn's item stream (which `run_turn` yields from, in order with the CLI's messages) and waits
for the engine to answer `request.reply`. A question with no turn to carry it is denied.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, Literal

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from claude_agent_sdk import (
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)

from core.backend import ApprovalAnswer, ApprovalRequest

log = structlog.get_logger(__name__)

Kind = Literal["tool", "command", "file", "other"]

_FILE_TOOLS = {
    "Write": "Write",
    "Edit": "Edit",
    "MultiEdit": "Edit",
    "NotebookEdit": "Edit",
    "Read": "Read",
}
_SUMMARY_LIMIT = 200
DENIED_BY_CALLER = "The caller denied this."
TURN_STOPPED = "The turn was stopped."
NO_TURN = "No turn of the a2a-wrapper daemon is waiting to ask the caller; denied."


def approval_request(
    tool_name: str, tool_input: Mapping[str, Any], context: ToolPermissionContext
) -> ApprovalRequest:
    """The question for the caller about one `can_use_tool` request: what kind of thing is
    asked, a one-line summary (the command, the path, the URL), and in `detail` the tool's whole
    input plus Claude Code's reason when it gives one."""
    kind: Kind = "tool"
    detail: dict[str, Any] = {"input": dict(tool_input)}
    command = tool_input.get("command")
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    url = tool_input.get("url")
    if tool_name == "Bash" and isinstance(command, str):
        kind, detail["command"] = "command", command
        summary = f"Run `{_clip(command)}` in the working directory"
    elif tool_name in _FILE_TOOLS and isinstance(path, str):
        kind, detail["path"] = "file", path
        summary = f"{_FILE_TOOLS[tool_name]} {path}"
    elif isinstance(url, str):
        kind, detail["url"] = "other", url
        summary = f"Fetch {url} ({tool_name})"
    elif tool_name.startswith("mcp__"):
        _, server, tool = [*tool_name.split("__", 2), "", ""][:3]
        summary = f"Use the MCP tool {tool} of the server {server}"
    else:
        summary = context.title or f"Use the tool {tool_name}"
    if context.decision_reason:
        detail["reason"] = context.decision_reason
    if context.blocked_path:
        detail["blockedPath"] = context.blocked_path
    return ApprovalRequest(
        request_id=str(uuid.uuid4()),
        kind=kind,
        tool=tool_name,
        summary=summary,
        detail=detail,
    )


def session_rules(context: ToolPermissionContext) -> list[PermissionUpdate]:
    """What `approve_always` hands back to Claude Code: the allow rules it suggests for this
    request (the ones its own prompt offers as "don't ask again"), kept for the session only,
    never written to a settings file."""
    return [
        PermissionUpdate(type="addRules", rules=s.rules, behavior="allow", destination="session")
        for s in context.suggestions
        if s.type == "addRules" and s.behavior == "allow" and s.rules
    ]


def request_key(tool_name: str, tool_input: Mapping[str, Any]) -> str:
    """What `approve_always` remembers when Claude Code suggests no rule: this exact call."""
    return f"{tool_name}:{json.dumps(tool_input, sort_keys=True, default=str)}"


class Approver:
    """The `can_use_tool` callback of one warm client, and the turn it asks through.

    `begin(send)` routes the questions of the client's next turn into `send`; `end()` stops
    that (a later question is denied). `approve_always` answers live as long as the client:
    Claude Code keeps session rules in its process, and so does this object for the rest."""

    def __init__(self) -> None:
        self._send: MemoryObjectSendStream[Any] | None = None
        self._always: set[str] = set()
        self._waiting: dict[str, ApprovalRequest] = {}

    def begin(self, send: MemoryObjectSendStream[Any]) -> None:
        self._send = send

    def end(self) -> None:
        """The turn is over (or its consumer gone): a question still waiting is denied, so
        Claude Code is never left hanging on a callback that nobody will answer."""
        if self._send is not None:
            self._send.close()
            self._send = None
        for question in list(self._waiting.values()):
            question.reply.answer(ApprovalAnswer("deny", TURN_STOPPED))

    async def can_use_tool(
        self, tool_name: str, tool_input: dict[str, Any], context: ToolPermissionContext
    ) -> PermissionResult:
        key = request_key(tool_name, tool_input)
        if key in self._always:
            return PermissionResultAllow()
        send = self._send
        if send is None:
            return PermissionResultDeny(message=NO_TURN)
        question = approval_request(tool_name, tool_input, context)
        try:
            send.send_nowait(question)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError, anyio.WouldBlock):
            return PermissionResultDeny(message=NO_TURN)
        self._waiting[question.request_id] = question
        try:
            answer = await question.reply.wait()
        finally:
            self._waiting.pop(question.request_id, None)
        if answer.decision == "deny":
            return PermissionResultDeny(message=answer.message or DENIED_BY_CALLER)
        if answer.decision == "approve_always":
            rules = session_rules(context)
            log.info("claude.approve_always", tool=tool_name, session_rules=len(rules))
            if rules:
                return PermissionResultAllow(updated_permissions=rules)
            self._always.add(key)
        return PermissionResultAllow()


def _clip(text: str, limit: int = _SUMMARY_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
