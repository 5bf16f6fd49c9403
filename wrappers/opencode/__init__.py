"""OpenCode as an A2A agent: a supervised `opencode serve` child driven over its HTTP API.

Modules: `launch` (binary, arguments, environment, inline config), `server` (the supervisor),
`client` (our HTTP client), `router` (the one `/event` reader), `events` (the pure mapping to
BackendEvents), `backend` (the `Backend`), `diagnose` (`a2a-wrapper check`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.backend.spec import BackendSpec
from wrappers.opencode.config import OpencodeConfig

if TYPE_CHECKING:
    from wrappers.opencode.backend import OpencodeBackend
    from wrappers.opencode.launch import Launch

__all__ = ["SPEC", "OpencodeConfig", "create", "server_launch"]


def create(config: OpencodeConfig) -> OpencodeBackend:
    """`OpencodeBackend` from its validated block (what the registry's spec calls)."""
    # Here, not at the top: importing the package (for its config) must not import the SDK.
    from wrappers.opencode.backend import OpencodeBackend  # noqa: PLC0415

    return OpencodeBackend(config)


def server_launch(config: OpencodeConfig, password: str) -> Launch:
    """How the backend starts `opencode serve` for `config` (binary, arguments, environment):
    for tools comparing the wrapper with the raw server."""
    from wrappers.opencode.launch import build_launch, find_binary  # noqa: PLC0415

    return build_launch(config, find_binary(None), password)


SPEC = BackendSpec("opencode", OpencodeConfig, create)
"""What the registry resolves `"backend": "opencode"` to."""
