"""The `codex` config block (docs/backends.md#codex)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, JsonValue, field_validator, model_validator
from pydantic_core import PydanticCustomError

from core.backend.config import AgentBlock

Sandbox = Literal["read-only", "workspace-write", "danger-full-access"]
ApprovalPolicy = Literal["never", "on-request", "on-failure", "untrusted"]
ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh"]

INTERACTIVE_APPROVAL = (
    'approvalPolicy "{policy}" needs someone to approve each command interactively, and a '
    'daemon has no one to ask; use "never" (commands run inside the sandbox, anything the '
    "sandbox forbids fails) and choose the sandbox to fit"
)
FULL_ACCESS = (
    'sandbox "danger-full-access" lets the agent run any command with your permissions, '
    "unsandboxed; set dangerouslyAllowFullAccess: true to allow it"
)


class CodexConfig(AgentBlock):
    sandbox: Sandbox = Field(
        default="workspace-write",
        description="What commands the agent runs may touch: read-only, workspace-write (the "
        "working directory and additionalDirectories), or danger-full-access (needs "
        "dangerouslyAllowFullAccess)",
    )
    dangerously_allow_full_access: bool = Field(
        default=False, description='Allow sandbox "danger-full-access"'
    )
    approval_policy: ApprovalPolicy = Field(
        default="never",
        description='Only "never" works headless; the interactive policies are refused',
    )
    skip_git_repo_check: bool = Field(
        default=False,
        description="Allow a workingDirectory outside a git repository (like `codex exec "
        "--skip-git-repo-check`)",
    )
    additional_directories: list[Path] = Field(
        default_factory=list,
        description="More directories the workspace-write sandbox lets the agent write to",
    )
    developer_instructions: str | None = Field(
        default=None, description="A developer message added to every new or resumed thread"
    )
    base_instructions: str | None = Field(
        default=None, description="Replace Codex's own base instructions"
    )
    reasoning_effort: ReasoningEffort | None = Field(
        default=None, description="Reasoning effort for each turn; default: the model's own"
    )
    config: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="Codex config overrides, as in config.toml (e.g. model_provider and "
        "model_providers to use any Responses-API endpoint); nested objects are tables",
    )

    @field_validator("approval_policy")
    @classmethod
    def _headless_approval(cls, policy: ApprovalPolicy) -> ApprovalPolicy:
        if policy != "never":
            raise PydanticCustomError(
                "interactive_approval", INTERACTIVE_APPROVAL, {"policy": policy}
            )
        return policy

    @field_validator("config")
    @classmethod
    def _toml_values(cls, config: dict[str, JsonValue]) -> dict[str, JsonValue]:
        path = _first_null(config, "")
        if path is not None:
            raise PydanticCustomError(
                "null_override",
                "{path} is null, which Codex config cannot hold; leave it out",
                {"path": path},
            )
        return config

    @model_validator(mode="after")
    def _full_access_is_explicit(self) -> CodexConfig:
        if self.sandbox == "danger-full-access" and not self.dangerously_allow_full_access:
            raise PydanticCustomError("full_access", FULL_ACCESS)
        return self


def _first_null(value: JsonValue, path: str) -> str | None:
    """The dotted path of the first null inside `value`, if any."""
    if value is None:
        return path
    items: list[tuple[str, JsonValue]] = []
    if isinstance(value, dict):
        items = [(f"{path}.{k}" if path else k, v) for k, v in value.items()]
    elif isinstance(value, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(value)]
    for sub_path, item in items:
        found = _first_null(item, sub_path)
        if found is not None:
            return found
    return None
