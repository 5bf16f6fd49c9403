"""Codex approval requests as A2A questions (`approvals.mode: ask`). Pure functions.

In ask mode a turn runs with approval policy `on-request`: commands run inside the sandbox
without a question, and what the sandbox forbids (the model asks to run a command escalated,
or to patch a file outside the writable roots) reaches us as a server request:

- `item/commandExecution/requestApproval` {itemId, command, cwd, reason?, ...};
- `item/fileChange/requestApproval` {itemId, reason?, grantRoot?}: the paths are in the
  `fileChange` item announced just before (`item/started`), which `PatchPaths` remembers.

Each becomes an `ApprovalRequest`; the caller's answer becomes the JSON-RPC result:
approve -> `accept`, approve_always -> `acceptForSession` (Codex stops asking for the same
command, or the same files, in this thread), deny -> `decline` (the model sees the tool
rejected "by user" and the turn goes on). The result has no room for a message; the backend
passes a denial's message on as a steer of the running turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from core.backend import ApprovalAnswer, ApprovalRequest, Decision

COMMAND_APPROVAL = "item/commandExecution/requestApproval"
FILE_APPROVAL = "item/fileChange/requestApproval"
ASKED_METHODS = frozenset({COMMAND_APPROVAL, FILE_APPROVAL})
# The approval policy of a turn in ask mode: Codex asks only about what its sandbox forbids.
ASK_POLICY = "on-request"

DECISIONS: dict[Decision, str] = {
    "approve": "accept",
    "approve_always": "acceptForSession",
    "deny": "decline",
}


def result_for(answer: ApprovalAnswer) -> dict[str, Any]:
    """The JSON-RPC result of an approval request, for the caller's answer."""
    return {"decision": DECISIONS[answer.decision]}


@dataclass
class PatchPaths:
    """The paths of each `fileChange` item of a turn, by item id (a file-change approval
    request names only the item)."""

    paths: dict[str, list[str]] = field(default_factory=dict)

    def see(self, method: str, params: Mapping[str, Any]) -> None:
        item = params.get("item")
        if method != "item/started" or not isinstance(item, dict):
            return
        if item.get("type") == "fileChange":
            changes = item.get("changes") or []
            self.paths[str(item.get("id"))] = [
                str(c["path"]) for c in changes if isinstance(c, dict) and "path" in c
            ]


def approval_request(
    request_id: str, method: str, params: Mapping[str, Any], patches: PatchPaths
) -> ApprovalRequest:
    """The question for the caller about one Codex approval request (`method` is one of
    ASKED_METHODS); `request_id` identifies it to the engine."""
    reason = params.get("reason")
    detail: dict[str, Any] = {}
    if isinstance(reason, str) and reason:
        detail["reason"] = reason
    because = f" (reason: {reason})" if isinstance(reason, str) and reason else ""
    kind: Literal["command", "file"]
    if method == COMMAND_APPROVAL:
        kind, tool = "command", "shell"
        command = _command_text(params)
        cwd = params.get("cwd")
        detail["command"] = command
        if isinstance(cwd, str):
            detail["cwd"] = cwd
        where = f" in {cwd}" if isinstance(cwd, str) else ""
        summary = f"Run `{_clip(command)}`{where} outside the sandbox{because}"
    else:
        kind, tool = "file", "apply_patch"
        paths = patches.paths.get(str(params.get("itemId")), [])
        detail["paths"] = paths
        if paths:
            detail["path"] = paths[0]
        root = params.get("grantRoot")
        if isinstance(root, str):
            detail["grantRoot"] = root
        named = ", ".join(paths) if paths else "files"
        summary = f"Change {_clip(named)} outside the writable roots{because}"
    return ApprovalRequest(
        request_id=request_id, kind=kind, tool=tool, summary=summary, detail=detail
    )


def _command_text(params: Mapping[str, Any]) -> str:
    """The command as the model wrote it (Codex reports it wrapped: `/bin/bash -lc '...'`)."""
    actions = params.get("commandActions")
    if isinstance(actions, list) and len(actions) == 1 and isinstance(actions[0], dict):
        command = actions[0].get("command")
        if isinstance(command, str) and command:
            return command
    command = params.get("command")
    return command if isinstance(command, str) else ""


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
