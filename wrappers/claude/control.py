"""Conversation control for Claude Code (core/backend/control.py): what the backend declares,
and how a turn's options, a steered message and a fork reach the CLI (2.1.332, measured).

- model: the CLI's `set_model` control request before the turn. Claude Code takes any name
  (an unknown one is sent to the endpoint as it is) or alias, and itself maps retired names
  and aliases (`opus`, `claude-opus-4-1` -> its current Opus). The next turn that chooses
  none sets the configured model back first.
- effort: the CLI takes it only when the process starts (`--effort`), so a turn choosing
  another effort than its context's process runs with gets a new process, resuming the
  session (`ClaudeBackend._unusable`). Claude Code sends it (`output_config.effort`) only for
  models that have efforts; for older ones it keeps its thinking budget.
- mode: `plan` puts the CLI in its plan permission mode for the turn (its own plan-mode
  instructions); `plan` and `readOnly` arm the `Guard`, a PreToolUse hook every client carries,
  which denies every tool but the read-only ones. Claude Code runs that hook before its
  permission rules, so neither `allowedTools`, `bypassPermissions` nor a caller's approval
  lets a write through; the shell is denied whole (it cannot be told read-only).
- steer: a user message written to the CLI's stdin while the turn runs. Claude Code hands it
  to the model with the next tool result ("The user sent a new message while you were
  working"), or, when the model had already finished, runs it as its next turn right after;
  the daemon's turn then goes on until the CLI's result that leaves no steered message
  untaken (`Pump.pending`, from the CLI's echo of each message it takes).
- fork: a new process resuming the source session with `fork_session`: the CLI copies its
  history into a new session id (the source's transcript is not touched).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from claude_agent_sdk import ClaudeSDKClient, ClaudeSDKError, HookMatcher
from claude_agent_sdk.types import (
    EffortLevel,
    HookContext,
    HookEvent,
    HookInput,
    HookJSONOutput,
    PermissionMode,
)

from core.backend import Content, Mode, TurnOptions
from core.backend.control import Capabilities, SteerRefusedError
from wrappers.claude.prompt import parts_message
from wrappers.claude.stream import once

if TYPE_CHECKING:
    from wrappers.claude.config import ClaudeConfig
    from wrappers.claude.pool import Pump, WarmClient

EFFORTS: tuple[EffortLevel, ...] = ("low", "medium", "high", "xhigh", "max")
"""The claude-agent-sdk's effort levels (`ClaudeAgentOptions.effort`)."""

READ_ONLY_TOOLS = frozenset(
    {
        "Read",
        "Glob",
        "Grep",
        "LS",
        "NotebookRead",
        "WebFetch",
        "WebSearch",
        "TodoWrite",
        "ToolSearch",
    }
)
"""What a `plan` or `readOnly` turn may still use: tools that change no file and run nothing."""

_DENIED = {
    "plan": "This message asked for a plan only: no tool that edits files or runs commands may "
    "be used. Answer with the plan.",
    "readOnly": "This message is read-only: no tool that edits files or runs commands may be "
    "used. Read, search and answer.",
}


def capabilities() -> Capabilities:
    return Capabilities(
        steer=True,
        fork=True,
        models=None,
        efforts=EFFORTS,
        modes=("default", "plan", "readOnly"),
        approvals=True,
        resume=True,
        image_input=True,
    )


def effort(options: TurnOptions) -> EffortLevel | None:
    """The turn's effort as the SDK types it (the engine let only `EFFORTS` through)."""
    return next((e for e in EFFORTS if e == options.effort), None)


class Guard:
    """The PreToolUse hook of one client: while its turn's mode is `plan` or `readOnly`, every
    tool but `READ_ONLY_TOOLS` is denied (subagents' tools included: they run the same hooks)."""

    def __init__(self) -> None:
        self.mode: Mode = "default"

    async def pre_tool_use(
        self, hook_input: HookInput, tool_use_id: str | None, context: HookContext
    ) -> HookJSONOutput:
        tool = cast("dict[str, Any]", hook_input).get("tool_name")
        if self.mode == "default" or tool in READ_ONLY_TOOLS:
            return {}
        return {
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": _DENIED[self.mode],
            }
        }

    def hooks(self) -> dict[HookEvent, list[HookMatcher]]:
        # "block": a failing callback denies the tool (fail closed), never lets it run.
        matcher = HookMatcher(matcher=None, hooks=[self.pre_tool_use], on_failure="block")
        return {"PreToolUse": [matcher]}


class OptionsRefusedError(Exception):
    """The CLI did not take a turn's model or permission mode (its words are for the log)."""


async def prepare(warm: WarmClient, options: TurnOptions, config: ClaudeConfig) -> None:
    """Put `warm`'s process in the state the turn's `options` ask for (the configured one for
    what they do not choose), before its prompt goes out; OptionsRefusedError when the CLI
    does not take it."""
    warm.guard.mode = options.mode or "default"
    model = options.model if options.model is not None else config.model
    permission: PermissionMode = "plan" if options.mode == "plan" else config.permission_mode
    try:
        if model != warm.model:
            await warm.client.set_model(model)
            warm.model = model
        if permission != warm.permission_mode:
            await warm.client.set_permission_mode(permission)
            warm.permission_mode = permission
    except Exception as exc:  # the SDK raises a plain Exception for a refused control request
        raise OptionsRefusedError(str(exc)) from exc


async def steer(client: ClaudeSDKClient, pump: Pump, parts: tuple[Content, ...]) -> None:
    """Write `parts` into the running turn; the pump waits for the CLI to take them."""
    if pump.closed:
        raise SteerRefusedError("the turn is ending")
    message = parts_message(parts)
    pump.pending.add(message["uuid"])
    try:
        await client.query(once(message))
    except ClaudeSDKError as exc:
        pump.pending.discard(message["uuid"])
        raise SteerRefusedError("the Claude Code process did not take the message") from exc
