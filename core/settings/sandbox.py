"""The `sandbox` block of the Settings model: whether and how each principal's agent processes
are walled off (docs/configuration.md, "sandbox"; what it implies: core/settings/jails.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from core.backend.config import Block


class SandboxSettings(Block):
    mode: Literal["none", "bubblewrap"] = Field(
        default="none",
        description="none: agents run as the daemon's user and see what it sees; bubblewrap: "
        "each principal's agent processes run in a sandbox of their own (docs/operations.md)",
    )
    network: Literal["host", "none"] = Field(
        default="host",
        description="host: the sandbox shares the machine's network (the agent must reach its "
        "model); none: no network at all (an agent whose model runs in the same sandbox)",
    )
    extra_read_only: list[Path] = Field(
        default_factory=list,
        description="Paths every sandbox sees read-only even where they would be hidden "
        "(e.g. agent binaries under the daemon user's home)",
    )
    extra_read_write: list[Path] = Field(
        default_factory=list,
        description="Paths every sandbox may write (shared by every principal: a cache, never "
        "a secret)",
    )
    scope: Literal["principal", "context"] = Field(
        default="principal",
        description="principal: one sandbox (and agent instance) per principal, shared by its "
        "contexts; context: one per context (a server backend then runs a server per context)",
    )
