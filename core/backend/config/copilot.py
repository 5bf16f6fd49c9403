"""The `copilot` config block (docs/backends.md#copilot)."""

from __future__ import annotations

from core.backend.config import AgentBlock


class CopilotConfig(AgentBlock):
    pass
