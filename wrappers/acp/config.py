"""The `acp` config block, and the blocks of its named presets (docs/backends.md#acp)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from core.backend.config import AgentBlock

# ACP's tool kinds (`ToolCall.kind`), which `approveKinds` names.
ToolKind = Literal[
    "read", "edit", "delete", "move", "search", "execute", "think", "fetch", "switch_mode", "other"
]
# What the daemon approves on its own by default: tools that change nothing.
DEFAULT_APPROVE_KINDS: list[ToolKind] = ["read", "search", "think"]


class AcpConfig(AgentBlock):
    """Any agent that speaks the Agent Client Protocol over stdio."""

    command: list[str] | None = Field(
        default=None,
        min_length=1,
        description='The agent\'s argv, run without a shell (e.g. ["my-agent", "--acp"]); '
        "the first word is looked up on PATH; cliPath replaces it. Required for `acp`; a "
        "preset has its own",
    )
    approve_kinds: list[ToolKind] = Field(
        default_factory=lambda: list(DEFAULT_APPROVE_KINDS),
        description="Tool kinds (ACP ToolKind) whose permission requests the daemon approves "
        "itself; any other request is denied (approvals.mode policy) or asked "
        "(approvals.mode ask)",
    )
    session_mode: str | None = Field(
        default=None,
        description="A session mode the agent advertises (session/set_mode), set on every "
        "session it opens, e.g. Gemini CLI's `autoEdit`; unset = the agent's default",
    )

    @model_validator(mode="after")
    def _command_or_binary(self) -> AcpConfig:
        if self.command is None and self.cli_path is None and type(self) is AcpConfig:
            raise ValueError('command is required: the agent\'s argv, e.g. ["gemini", "--acp"]')
        return self


class GeminiConfig(AcpConfig):
    """Gemini CLI (`gemini --acp`)."""


class OpencodeAcpConfig(AcpConfig):
    """OpenCode over ACP (`opencode acp`); the `opencode` backend stays its default."""


class CopilotAcpConfig(AcpConfig):
    """GitHub Copilot CLI over ACP (`copilot --acp`); the `copilot` backend stays its default."""
