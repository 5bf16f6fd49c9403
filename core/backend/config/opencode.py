"""The `opencode` config block (docs/backends.md#opencode)."""

from __future__ import annotations

from core.backend.config import AgentBlock


class OpencodeConfig(AgentBlock):
    pass
