"""OpenAI Codex as an A2A backend, through `codex app-server` (docs/backends.md#codex).

Modules: `backend` (the Backend: lifecycle, turns, interrupt, warm threads), `appserver` (the
JSON-RPC client of one app-server process), `events` (notifications -> BackendEvents, pure),
`threads` (a warm thread; the kit's WarmPool keeps them), `options` (config -> command line
and parameters), `control` (what the backend declares, each turn's settings, steering),
`stopping` (a running turn and how it stops), `inputs` (parts -> input items), `diagnose`
(`a2a-wrapper check`), `process` and `background` (child processes and background tasks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.backend.spec import BackendSpec
from wrappers.codex.config import CodexConfig

if TYPE_CHECKING:
    from wrappers.codex.backend import CodexBackend

__all__ = ["SPEC", "create"]


def create(config: CodexConfig) -> CodexBackend:
    """`CodexBackend` from its validated block (what the registry's spec calls)."""
    # Here, not at the top: importing the package (for its config) must not import the SDK.
    from wrappers.codex.backend import CodexBackend  # noqa: PLC0415

    return CodexBackend(config)


SPEC = BackendSpec("codex", CodexConfig, create)
"""What the registry resolves `"backend": "codex"` to."""
