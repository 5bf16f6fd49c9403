"""The `claude` config block (docs/backends.md#claude)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from core.backend.config import AgentBlock, Block

PermissionMode = Literal["acceptEdits", "dontAsk", "plan", "bypassPermissions"]
SettingSource = Literal["user", "project", "local"]

_INTERACTIVE_MODES = {
    "default": "asks a person before each risky tool call",
    "auto": "lets a model classifier make extra calls to approve each tool call",
}


class SystemPromptPreset(Block):
    """Claude Code's own system prompt, optionally with text appended."""

    preset: Literal["claude_code"] = "claude_code"
    append: str | None = Field(default=None, description="Text appended to the preset prompt")


class ClaudeConfig(AgentBlock):
    permission_mode: PermissionMode = Field(
        default="acceptEdits",
        description="acceptEdits (edits in the working directory are approved), dontAsk "
        "(anything not pre-approved by allowedTools is denied), plan (no tool runs), or "
        "bypassPermissions (everything runs; needs dangerouslyAllowBypassPermissions). "
        "`default` is refused: it needs an interactive approver",
    )
    dangerously_allow_bypass_permissions: bool = Field(
        default=False,
        description="Required (true) for permissionMode bypassPermissions: every tool call "
        "runs without any check",
    )
    allowed_tools: list[str] = Field(
        default_factory=list, description='Tools approved without asking, e.g. ["Bash(git:*)"]'
    )
    disallowed_tools: list[str] = Field(
        default_factory=list, description="Tools removed from the agent"
    )
    system_prompt: str | SystemPromptPreset = Field(
        default_factory=SystemPromptPreset,
        description='A replacement system prompt, or {"preset": "claude_code", "append": '
        '"..."}; default: Claude Code\'s own prompt',
    )
    setting_sources: list[SettingSource] = Field(
        default_factory=list,
        description="Which settings files (and CLAUDE.md) the agent reads; [] = none",
    )
    max_turns: int | None = Field(
        default=None, ge=1, description="Agent loop steps per turn at most; default: no limit"
    )
    max_budget_usd: float | None = Field(
        default=None, gt=0, description="Stop a turn once its cost exceeds this (USD)"
    )
    fallback_model: str | None = Field(
        default=None, description="Model used when the main one is overloaded"
    )
    add_dirs: list[Path] = Field(
        default_factory=list, description="Directories the agent may use besides its own"
    )

    @field_validator("permission_mode", mode="before")
    @classmethod
    def _refuse_interactive(cls, value: Any) -> Any:
        if isinstance(value, str) and value in _INTERACTIVE_MODES:
            raise ValueError(
                f"permission mode {value!r} {_INTERACTIVE_MODES[value]}, which a headless "
                "daemon cannot do; use acceptEdits, dontAsk or plan (or bypassPermissions with "
                "dangerouslyAllowBypassPermissions: true)"
            )
        return value

    @model_validator(mode="after")
    def _bypass_needs_consent(self) -> ClaudeConfig:
        if (
            self.permission_mode == "bypassPermissions"
            and not self.dangerously_allow_bypass_permissions
        ):
            raise ValueError(
                "permissionMode bypassPermissions runs every tool call without any check; "
                "set dangerouslyAllowBypassPermissions: true to allow it"
            )
        return self
