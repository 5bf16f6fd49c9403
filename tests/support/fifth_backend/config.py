"""The `fifth` block: the shared agent keys, plus where the model is."""

from __future__ import annotations

from pydantic import Field, field_validator

from core.backend.config import AgentBlock


class FifthConfig(AgentBlock):
    base_url: str = Field(description="An OpenAI chat completions API, e.g. http://host/v1")
    api_key: str | None = Field(default=None, description="Sent as a bearer token when set")
    system_prompt: str | None = Field(default=None, description="The first message of a session")
    request_timeout: int = Field(default=60_000, ge=1, description="ms one model request may take")

    @field_validator("base_url")
    @classmethod
    def _http(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must be an http:// or https:// URL")
        return value.rstrip("/")
