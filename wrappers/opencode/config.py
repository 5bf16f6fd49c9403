"""The `opencode` config block (docs/backends.md#opencode)."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, JsonValue, field_validator, model_validator

from core.backend.config import AgentBlock

PermissionAction = Literal["allow", "deny", "ask"]
PermissionRule = PermissionAction | dict[str, PermissionAction]

# What OpenCode would otherwise "ask" about by default: denied unless configured otherwise.
DEFAULT_PERMISSION: dict[str, PermissionRule] = {
    "question": "deny",
    "external_directory": "deny",
    "doom_loop": "deny",
}


class OpencodeConfig(AgentBlock):
    """OpenCode, driven through one `opencode serve` child (or a running server: `serverUrl`)."""

    agent: str | None = Field(
        default=None, description="OpenCode agent for every prompt (default: OpenCode's, 'build')"
    )
    system_prompt: str | None = Field(
        default=None,
        description="Appended to OpenCode's system prompt on every turn (to replace it, set "
        "config.agent.<agent>.prompt)",
    )
    config: dict[str, JsonValue] = Field(
        default_factory=dict,
        description="An OpenCode config object (opencode.json keys, e.g. custom providers), "
        "passed inline through OPENCODE_CONFIG_CONTENT; never written to the repository",
    )
    server_url: str | None = Field(
        default=None,
        description="Attach to this running `opencode serve` (credentials as "
        "http://user:password@host:port) instead of starting one",
    )
    permission: dict[str, PermissionRule] = Field(
        default_factory=dict,
        description="OpenCode's permission map (allow, deny, ask), merged over the defaults "
        "(question, external_directory and doom_loop denied); 'ask' becomes a question to the "
        "caller with approvals.mode ask, and is denied at once with policy",
    )
    dangerously_allow_external_directory: bool = Field(
        default=False,
        description="Required to set permission.external_directory to allow (files outside "
        "workingDirectory)",
    )
    max_retries: int | None = Field(
        default=3,
        ge=0,
        description="Model retries (5xx, 429) before the turn fails; null = OpenCode retries "
        "forever and only the daemon's timeouts end the turn",
    )
    startup_timeout: int = Field(
        default=60_000, ge=1000, description="ms to wait for `opencode serve` to listen"
    )

    @field_validator("model")
    @classmethod
    def _provider_and_model(cls, value: str | None) -> str | None:
        if value is not None and "/" not in value.strip("/"):
            raise ValueError("must be 'provider/model', e.g. 'anthropic/claude-sonnet-4-5'")
        return value

    @model_validator(mode="after")
    def _checks(self) -> Self:
        external = self.permission.get("external_directory")
        values = external.values() if isinstance(external, dict) else [external]
        if "allow" in values and not self.dangerously_allow_external_directory:
            raise ValueError(
                "permission.external_directory 'allow' lets the agent touch files outside "
                "workingDirectory; set dangerouslyAllowExternalDirectory: true to confirm"
            )
        if self.server_url is not None:
            managed = {
                "config": bool(self.config),
                "mcpServers": bool(self.mcp_servers),
                "env": bool(self.env),
                "cliPath": self.cli_path is not None,
                "home": self.home is not None,
            }
            used = [key for key, set_ in managed.items() if set_]
            if used:
                raise ValueError(
                    f"{', '.join(used)}: only for a server the daemon starts; with serverUrl "
                    "the server is already running (configure it there)"
                )
        return self

    def permission_map(self) -> dict[str, PermissionRule]:
        """The effective permission map: the headless defaults, then the configured keys."""
        return {**DEFAULT_PERMISSION, **self.permission}
