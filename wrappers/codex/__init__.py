"""OpenAI Codex as an A2A backend, through `codex app-server` (docs/backends.md#codex).

Modules: `backend` (the Backend: lifecycle, turns, interrupt, warm threads), `appserver` (the
JSON-RPC client of one app-server process), `events` (notifications -> BackendEvents, pure),
`threads` (a warm thread; the kit's WarmPool keeps them), `options` (config -> command line
and parameters), `inputs` (parts -> input items), `diagnose` (`a2a-wrapper check`), `process`
and `background` (child processes and background tasks).
"""

from __future__ import annotations

from core.backend.spec import BackendSpec
from wrappers.codex.backend import CodexBackend
from wrappers.codex.config import CodexConfig

__all__ = ["SPEC", "CodexBackend", "create"]


def create(config: CodexConfig) -> CodexBackend:
    """`CodexBackend` from its validated block (what the registry's spec calls)."""
    return CodexBackend(config)


SPEC = BackendSpec("codex", CodexConfig, create)
"""What the registry resolves `"backend": "codex"` to."""
