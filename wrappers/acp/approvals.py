"""`session/request_permission` as the daemon's approvals.

The agent offers options of four kinds (`allow_once`, `allow_always`, `reject_once`,
`reject_always`); the daemon's decisions map onto them: approve -> allow_once, approve always ->
allow_always (allow_once when the agent offers no such option; the daemon then remembers the
tool for the session itself), deny -> reject_once (reject_always when that is all it offers).
Which requests are asked at all: a kind in `approveKinds`, or a tool the caller approved
always in this session, is approved by the daemon; under `approvals.mode: policy` everything
else is denied, under `ask` it becomes an `ApprovalRequest`.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Literal

from acp.schema import (
    AllowedOutcome,
    DeniedOutcome,
    PermissionOption,
    RequestPermissionResponse,
    ToolCallUpdate,
)

from core.backend import ApprovalRequest, Decision

_PREFERRED: dict[Decision, tuple[str, ...]] = {
    "approve": ("allow_once", "allow_always"),
    "approve_always": ("allow_always", "allow_once"),
    "deny": ("reject_once", "reject_always"),
}
_REQUEST_KIND: dict[str, Literal["tool", "command", "file", "other"]] = {
    "execute": "command",
    "edit": "file",
    "delete": "file",
    "move": "file",
}


def tool_key(tool_call: ToolCallUpdate) -> tuple[str, str]:
    """What "this tool" means for approve always: its kind and title (a shell call's title
    is its command line, so approving one command always does not approve every command)."""
    return (tool_call.kind or "other", tool_call.title or tool_call.tool_call_id)


def decided_by_policy(
    tool_call: ToolCallUpdate, approve_kinds: Collection[str], always: Collection[tuple[str, str]]
) -> bool:
    return (tool_call.kind or "other") in approve_kinds or tool_key(tool_call) in always


def answer(options: Sequence[PermissionOption], decision: Decision) -> RequestPermissionResponse:
    """The option that carries `decision`; `cancelled` when the agent offered none that fits
    (a denial it cannot misread)."""
    for kind in _PREFERRED[decision]:
        for option in options:
            if option.kind == kind:
                return RequestPermissionResponse(
                    outcome=AllowedOutcome(outcome="selected", option_id=option.option_id)
                )
    return cancelled()


def cancelled() -> RequestPermissionResponse:
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


def approval_request(
    tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
) -> ApprovalRequest:
    """The question the caller sees for one permission request."""
    kind = tool_call.kind or "other"
    raw: Any = tool_call.raw_input
    command = raw.get("command") if isinstance(raw, dict) else None
    title = tool_call.title or kind
    if command is None and kind == "execute":
        # Agents that send no raw input (Gemini CLI) title a shell call with its command line.
        command = tool_call.title
    if isinstance(command, str) and command:
        summary = f"Run `{command}` in the working directory"
    else:
        summary = f"Allow {title}"
    detail: dict[str, Any] = {
        "kind": kind,
        "title": title,
        "toolCallId": tool_call.tool_call_id,
        "options": [{"name": o.name, "kind": o.kind} for o in options],
    }
    if isinstance(command, str):
        detail["command"] = command
    if raw is not None:
        detail["input"] = raw
    if tool_call.locations:
        detail["locations"] = [loc.path for loc in tool_call.locations]
    return ApprovalRequest(
        request_id=tool_call.tool_call_id,
        kind=_REQUEST_KIND.get(kind, "tool"),
        tool=kind,
        summary=summary,
        detail=detail,
    )
