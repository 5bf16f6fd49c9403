"""The `claude` config block (docs/backends.md#claude)."""

from __future__ import annotations

from core.backend.config import AgentBlock


class ClaudeConfig(AgentBlock):
    pass
