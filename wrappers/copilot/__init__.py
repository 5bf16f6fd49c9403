"""GitHub Copilot CLI backend: `github-copilot-sdk` over stdio to the `copilot` binary.

Modules: `runtime` (the CLI child), `sessions` (warm sessions), `permissions` (the policy that
answers tool approvals), `events` (the pure event mapping), `options` / `prompt` (what a session
and a message are given), `diagnose` (`a2a-wrapper check`), `backend` (the `Backend` itself).
"""

from __future__ import annotations

from core.backend import Backend
from core.backend.config.copilot import CopilotConfig
from wrappers.copilot.backend import CopilotBackend


def create(config: CopilotConfig) -> Backend:
    """The registry's factory for `"backend": "copilot"`."""
    return CopilotBackend(config)


__all__ = ["CopilotBackend", "create"]
