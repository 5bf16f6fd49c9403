"""The `copilot` config block (docs/backends.md#copilot)."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from core.backend.config import AgentBlock, Block

# `kind` or `kind(argument)`, the Copilot CLI's own `--allow-tool` syntax: `shell`,
# `shell(git:*)`, `write(src/**)`, `url(https://example.com)`, `<mcp-server>(tool)`.
TOOL_PATTERN = re.compile(r"^(?P<kind>[A-Za-z0-9_.-]+)(?:\((?P<argument>[^()]*)\))?$")


class CopilotProvider(Block):
    """A BYOK model endpoint: the session talks to it instead of GitHub's Copilot API."""

    type: Literal["openai", "azure", "anthropic"] = Field(
        default="openai", description="API flavour of the endpoint"
    )
    base_url: str = Field(description="Base URL of the API, e.g. http://127.0.0.1:11434/v1")
    api_key: str | None = Field(default=None, description="Sent as a bearer token when set")
    wire_api: Literal["completions", "responses"] = Field(
        default="completions", description="OpenAI chat completions or the responses API"
    )

    @field_validator("api_key")
    @classmethod
    def _empty_is_unset(cls, value: str | None) -> str | None:
        # `"${KEY:-}"` substitutes to "": treat it as not configured.
        return value or None


class SystemMessage(Block):
    mode: Literal["append", "replace"] = Field(
        default="append",
        description="append: after Copilot's own system prompt; replace: instead of it "
        "(drops its guardrails too)",
    )
    content: str


class CopilotConfig(AgentBlock):
    provider: CopilotProvider | None = Field(
        default=None,
        description="BYOK model endpoint (any OpenAI/Azure/Anthropic-compatible API); "
        "unset = GitHub Copilot with githubToken or the user's `copilot login`",
    )
    github_token: str | None = Field(
        default=None,
        description="GitHub token for the Copilot API; unset = COPILOT_GITHUB_TOKEN, GH_TOKEN, "
        "GITHUB_TOKEN or the user's `copilot login`",
    )
    system_message: SystemMessage | None = None
    offline: bool = Field(
        default=False,
        description="COPILOT_OFFLINE=true: no GitHub auth, telemetry, web tools or auto-update; "
        "needs provider",
    )
    allow_tools: list[str] = Field(
        default_factory=list,
        description="Permission patterns to approve beyond the default policy: shell, "
        "shell(git:*), write, write(path), read, url(domain), <mcp-server>, <mcp-server>(tool)",
    )
    deny_tools: list[str] = Field(
        default_factory=list,
        description="Permission patterns to refuse; deny wins over allow",
    )
    dangerously_allow_all_tools: bool = Field(
        default=False,
        description="Approve every permission request (shell and writes anywhere, URLs, MCP) "
        "except denyTools",
    )

    @field_validator("github_token")
    @classmethod
    def _empty_token_is_unset(cls, value: str | None) -> str | None:
        return value or None

    @field_validator("allow_tools", "deny_tools")
    @classmethod
    def _patterns(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not TOOL_PATTERN.match(pattern):
                raise ValueError(
                    f"{pattern!r} is not a permission pattern: use kind or kind(argument), "
                    "e.g. shell, shell(git:*), write, url(example.com), myserver(tool)"
                )
        return patterns

    @model_validator(mode="after")
    def _consistent(self) -> CopilotConfig:
        if self.provider is not None and not self.model:
            raise ValueError("model is required with provider (a BYOK endpoint has no default)")
        if self.offline and self.provider is None:
            raise ValueError("offline needs provider: offline mode only talks to a BYOK endpoint")
        if self.provider is not None and self.github_token is not None:
            raise ValueError(
                "set either provider (BYOK) or githubToken: a session with a provider never "
                "uses the GitHub token"
            )
        if "COPILOT_ALLOW_ALL" in self.env and not self.dangerously_allow_all_tools:
            raise ValueError(
                "env.COPILOT_ALLOW_ALL also trusts the folder (its hooks, plugins and MCP "
                "servers); it needs dangerouslyAllowAllTools: true"
            )
        return self
