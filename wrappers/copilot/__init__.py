"""GitHub Copilot CLI backend: `github-copilot-sdk` over stdio to the `copilot` binary.

Modules: `runtime` (the CLI child), `sessions` (warm sessions), `permissions` (the policy that
answers tool approvals), `events` (the pure event mapping), `options` / `prompt` (what a session
and a message are given), `diagnose` (`a2a-wrapper check`), `backend` (the `Backend` itself).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.backend.spec import BackendSpec
from wrappers.copilot.config import CopilotConfig

if TYPE_CHECKING:
    from wrappers.copilot.backend import CopilotBackend

__all__ = ["SPEC", "create"]


def create(config: CopilotConfig) -> CopilotBackend:
    """`CopilotBackend` from its validated block (what the registry's spec calls)."""
    # Here, not at the top: importing the package (for its config) must not import the SDK.
    from wrappers.copilot.backend import CopilotBackend  # noqa: PLC0415

    return CopilotBackend(config)


SPEC = BackendSpec("copilot", CopilotConfig, create)
"""What the registry resolves `"backend": "copilot"` to."""
