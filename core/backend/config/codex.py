"""The `codex` config block (docs/backends.md#codex)."""

from __future__ import annotations

from core.backend.config import AgentBlock


class CodexConfig(AgentBlock):
    pass
