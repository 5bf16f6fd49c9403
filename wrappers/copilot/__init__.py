"""GitHub Copilot CLI backend: `github-copilot-sdk` over stdio to the `copilot` binary.

Modules: `runtime` (the CLI child), `sessions` (warm sessions), `permissions` (the policy that
answers tool approvals), `events` (the pure event mapping), `options` / `prompt` (what a session
and a message are given), `diagnose` (`a2a-wrapper check`), `backend` (the `Backend` itself).
"""

from __future__ import annotations

from core.backend.spec import BackendSpec
from wrappers.copilot.backend import CopilotBackend
from wrappers.copilot.config import CopilotConfig

__all__ = ["SPEC", "CopilotBackend", "create"]


def create(config: CopilotConfig) -> CopilotBackend:
    """`CopilotBackend` from its validated block (what the registry's spec calls)."""
    return CopilotBackend(config)


SPEC = BackendSpec("copilot", CopilotConfig, create)
"""What the registry resolves `"backend": "copilot"` to."""
