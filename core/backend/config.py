"""Config blocks of the built-in backends: the shared keys every agent accepts.

These models are part of the backend contract: the Settings model declares them (it is the only
reader of the config file), and each wrapper receives its own validated block. They import nothing
from the rest of `core`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from core.backend import Diagnosis


class Block(BaseModel):
    """A config block: camelCase keys, unknown keys are errors, values never change."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class StdioMcpServer(Block):
    type: Literal["stdio"] = "stdio"
    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)


class HttpMcpServer(Block):
    type: Literal["http"]
    url: str
    headers: dict[str, str] = Field(default_factory=dict)


McpServer = Annotated[StdioMcpServer | HttpMcpServer, Field(discriminator="type")]


class AgentBlock(Block):
    """Keys every backend block accepts (docs/backends.md)."""

    working_directory: Path = Field(
        default=Path("."), description="Where the agent works; must exist (checked at start)"
    )
    model: str | None = Field(default=None, description="Model name; default: the agent's own")
    env: dict[str, str] = Field(
        default_factory=dict, description="Extra environment for the agent process"
    )
    cli_path: Path | None = Field(default=None, description="Override the agent binary")
    home: Path | None = Field(
        default=None,
        description="The agent's own state directory; unset = the user's normal one, so "
        "`<cli> --resume <id>` works in their terminal",
    )
    mcp_servers: dict[str, McpServer] = Field(default_factory=dict)
    warm_idle: int = Field(
        default=600_000, ge=0, description="ms an idle warm session stays live; 0 = never evicted"
    )
    max_warm: int = Field(default=8, ge=1, description="Live warm sessions at most")


def working_directory_check(block: AgentBlock) -> Diagnosis:
    """The `working directory` line of `a2a-wrapper check`, once for every backend (a backend's
    own `diagnose()` leaves it out)."""
    where = block.working_directory.expanduser().resolve()
    if where.is_dir():
        return Diagnosis("working directory", True, str(where))
    return Diagnosis("working directory", False, f"{where} does not exist")
