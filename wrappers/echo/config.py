"""The `echo` block: the shared agent keys, and how fast it streams."""

from __future__ import annotations

from pydantic import Field

from core.backend.config import AgentBlock


class EchoConfig(AgentBlock):
    """`workingDirectory` is where `write:` puts files (a context's workspace when workspaces
    are on); `model`, `env`, `cliPath`, `home` and `mcpServers` are accepted and unused."""

    chunk_delay: int = Field(
        default=50,
        ge=0,
        le=10_000,
        description="ms between the streamed pieces (words) of an answer",
    )
