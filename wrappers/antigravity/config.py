"""The `antigravity` config block (docs/backends.md#antigravity)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from core.backend.config import AgentBlock, Block

# What a capability switch lets the agent do: run it, ask the caller first (under
# `approvals.mode: ask`; refused in policy mode, where nobody can be asked), or not have the
# tool at all (it is removed from what the model is offered).
Capability = Literal["allow", "ask", "deny"]


class Endpoint(Block):
    """Where the model runs: the Gemini API, any OpenAI-compatible chat completions server, or
    Vertex AI."""

    kind: Literal["gemini", "openai", "vertex"] = Field(
        default="gemini",
        description="gemini: the Gemini API (key from apiKey or GEMINI_API_KEY); openai: an "
        "OpenAI-compatible chat completions server at baseUrl; vertex: Vertex AI (project and "
        "location, or apiKey for express mode)",
    )
    base_url: str | None = Field(
        default=None,
        description="Base URL of the endpoint (openai: required, e.g. http://127.0.0.1:11434/v1; "
        "gemini/vertex: a proxy or gateway in front of the Google API)",
    )
    api_key: str | None = Field(
        default=None,
        description="API key (gemini: unset = GEMINI_API_KEY from the environment; vertex: "
        "express mode; openai: not supported by the runtime)",
    )
    project: str | None = Field(
        default=None, description="vertex: Google Cloud project (unset = GOOGLE_CLOUD_PROJECT)"
    )
    location: str | None = Field(
        default=None, description="vertex: Google Cloud region (unset = GOOGLE_CLOUD_LOCATION)"
    )

    @field_validator("api_key", "base_url", "project", "location")
    @classmethod
    def _empty_is_unset(cls, value: str | None) -> str | None:
        # `"${KEY:-}"` substitutes to "": treat it as not configured.
        return value or None

    @model_validator(mode="after")
    def _consistent(self) -> Endpoint:
        if self.kind == "openai" and self.base_url is None:
            raise ValueError("endpoint.baseUrl is required with kind openai")
        if self.kind == "openai" and self.api_key is not None:
            # google-antigravity 0.1.22 gives the runtime only a base URL for such a server.
            raise ValueError(
                "endpoint.apiKey is not supported with kind openai: the Antigravity runtime "
                "sends no key to an OpenAI-compatible server (put a keyless proxy in front)"
            )
        if self.kind != "vertex" and (self.project or self.location):
            raise ValueError("endpoint.project and endpoint.location only apply to kind vertex")
        if self.kind == "vertex" and self.api_key and (self.project or self.location):
            raise ValueError(
                "vertex takes either apiKey (express mode) or project and location, not both"
            )
        return self


class AntigravityConfig(AgentBlock):
    endpoint: Endpoint = Field(
        default_factory=Endpoint, description="The model endpoint (default: the Gemini API)"
    )
    file_writes: Capability = Field(
        default="allow",
        description="Creating and editing files (write_to_file, replace_file_content): allow, "
        "ask (the caller approves each, under approvals.mode ask) or deny (tools removed)",
    )
    commands: Capability = Field(
        default="ask",
        description="Shell commands (run_command): allow, ask (the caller approves each, under "
        "approvals.mode ask; refused in policy mode) or deny (tool removed)",
    )
    subagents: Capability = Field(
        default="deny",
        description="Subagents (invoke_subagent, define_subagent, run_workflow): allow, ask or "
        "deny (tools removed)",
    )
    system_instructions: str | None = Field(
        default=None, description="Text appended to Antigravity's own system instructions"
    )

    @model_validator(mode="after")
    def _model_for_openai(self) -> AntigravityConfig:
        if self.endpoint.kind == "openai" and not self.model:
            raise ValueError("model is required with endpoint kind openai (it has no default)")
        return self
