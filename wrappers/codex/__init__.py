"""OpenAI Codex as an A2A backend, through `codex app-server` (docs/backends.md#codex).

Modules: `backend` (the Backend: lifecycle, turns, interrupt, warm threads), `appserver` (the
JSON-RPC client of one app-server process), `events` (notifications -> BackendEvents, pure),
`threads` (warm-thread bookkeeping), `options` (config -> command line and parameters),
`inputs` (parts -> input items), `diagnose` (`a2a-wrapper check`), `process` and `background`
(child processes and background tasks).
"""

from __future__ import annotations

from core.backend.config.codex import CodexConfig
from wrappers.codex.backend import CodexBackend, CodexStartError

__all__ = ["CodexBackend", "CodexStartError", "create"]


def create(config: CodexConfig) -> CodexBackend:
    """The registry's factory for `"backend": "codex"`."""
    return CodexBackend(config)
