"""OpenCode as an A2A agent: a supervised `opencode serve` child driven over its HTTP API.

Modules: `launch` (binary, arguments, environment, inline config), `server` (the supervisor),
`client` (our HTTP client), `router` (the one `/event` reader), `events` (the pure mapping to
BackendEvents), `backend` (the `Backend`), `diagnose` (`a2a-wrapper check`).
"""

from __future__ import annotations

from core.backend.config.opencode import OpencodeConfig
from wrappers.opencode.backend import OpencodeBackend


def create(config: OpencodeConfig) -> OpencodeBackend:
    """The registry's factory for `"backend": "opencode"`."""
    return OpencodeBackend(config)


__all__ = ["OpencodeBackend", "create"]
