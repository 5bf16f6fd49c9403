"""Which tool calls run: the capability switches of the block, applied in the SDK's pre-tool
hook, and under `approvals.mode: ask` the caller's answer to an `ApprovalRequest`.

The harness asks the hook before every tool call and waits for its answer (allow, or deny with
a reason the model reads). "allow" tools pass; "ask" tools become a question to the caller in
ask mode, and are refused with a reason in policy mode (nobody can be asked); "deny" tools were
removed from what the model is offered, and are refused if called anyway.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Literal

import anyio
from google.antigravity import types
from google.antigravity.hooks import PreToolCallDecideHook

from core.backend import ApprovalRequest
from wrappers.antigravity.config import AntigravityConfig, Capability
from wrappers.antigravity.control import read_only_refusal
from wrappers.antigravity.options import COMMAND_TOOLS, FILE_WRITE_TOOLS, SUBAGENT_TOOLS
from wrappers.antigravity.session import ActiveTurn

Switch = Literal["commands", "fileWrites", "subagents"]
_KEYS: dict[Switch, str] = {
    "commands": "antigravity.commands",
    "fileWrites": "antigravity.fileWrites",
    "subagents": "antigravity.subagents",
}


def switch_of(tool: str) -> Switch | None:
    """The capability switch that governs `tool` (None: always allowed: reads, MCP tools)."""
    if tool in COMMAND_TOOLS:
        return "commands"
    if tool in FILE_WRITE_TOOLS:
        return "fileWrites"
    if tool in SUBAGENT_TOOLS:
        return "subagents"
    return None


def setting(config: AntigravityConfig, switch: Switch) -> Capability:
    values: dict[Switch, Capability] = {
        "commands": config.commands,
        "fileWrites": config.file_writes,
        "subagents": config.subagents,
    }
    return values[switch]


def question(call: Any, switch: Switch) -> ApprovalRequest:
    """The caller's question for one tool call (request id: the harness's call id)."""
    args: dict[str, Any] = dict(call.args or {})
    name = str(call.name)
    request_id = str(call.id or uuid.uuid4().hex)
    if switch == "commands":
        command = str(args.get("CommandLine", ""))
        cwd = str(args.get("Cwd", ""))
        where = f" in {cwd}" if cwd else ""
        return ApprovalRequest(
            request_id,
            "command",
            name,
            f"Run `{command}`{where}",
            {"command": command, "cwd": cwd, "input": args},
        )
    if switch == "fileWrites":
        path = str(call.canonical_path or args.get("TargetFile", ""))
        return ApprovalRequest(
            request_id, "file", name, f"Write {path}", {"path": path, "input": args}
        )
    return ApprovalRequest(request_id, "tool", name, f"Use {name}", {"input": args})


def _allow() -> Any:
    return types.HookResult(allow=True)


def _deny(reason: str) -> Any:
    return types.HookResult(allow=False, message=reason)


class Gate(PreToolCallDecideHook):  # type: ignore[misc]  # the SDK is untyped
    """The pre-tool hook of one agent. `active()` is the turn the agent is running (set by the
    backend around each turn); `always` holds the tools approved for the whole session."""

    def __init__(self, config: AntigravityConfig, active: Callable[[], ActiveTurn | None]) -> None:
        self._config = config
        self._active = active
        self.always: set[str] = set()

    async def run(self, context: Any, data: Any) -> Any:
        name = str(data.name)
        active = self._active()
        switch = switch_of(name)
        refusal = self._refusal(name, switch, active)
        if refusal is not None:
            return _deny(refusal)
        if switch is None or setting(self._config, switch) == "allow" or name in self.always:
            return _allow()
        if active is None or active.turn.approvals != "ask":
            return _deny(
                f"{name} needs the user's approval, and nobody can be asked: the daemon runs "
                f"with approvals.mode policy (set {_KEYS[switch]}: allow to let it run)."
            )
        request = question(data, switch)
        active.send(request)
        answer = await request.reply.wait()
        if active.halted:
            # The turn was stopped: the harness no longer waits for this call, and an answer
            # now would make it close the connection. The SDK cancels this at disconnect.
            await anyio.sleep_forever()
        if answer.decision == "approve_always":
            self.always.add(name)
        if answer.decision in ("approve", "approve_always"):
            return _allow()
        return _deny(answer.message or "The user denied this tool call.")

    def _refusal(self, name: str, switch: Switch | None, active: ActiveTurn | None) -> str | None:
        """Why the call is refused whatever anyone answers (None: it may run or be asked): a
        readOnly turn refuses all but reads, a switch set to deny its tools."""
        if active is not None and active.turn.options.mode == "readOnly":
            refusal = read_only_refusal(name)
            if refusal is not None:
                return refusal
        if switch is not None and setting(self._config, switch) == "deny":
            return f"{name} is turned off ({_KEYS[switch]}: deny)."
        return None
