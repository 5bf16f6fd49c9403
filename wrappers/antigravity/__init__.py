"""Google Antigravity backend: the `google-antigravity` SDK and the `localharness` runtime its
wheel bundles.

Modules: `config` (the block), `harness` (the runtime binary, started under the kit's orphan
guard), `options` (the SDK's agent config from the block), `session` (one live agent and its
turn), `approvals` (the pre-tool hook: capability switches and the caller's answers), `events`
(the pure step mapping), `diagnose` (`a2a-wrapper check`), `backend` (the `Backend` itself),
`resume` (a conversation in a terminal).
"""

from __future__ import annotations

from core.backend.spec import BackendSpec
from wrappers.antigravity.backend import AntigravityBackend
from wrappers.antigravity.config import AntigravityConfig

__all__ = ["SPEC", "AntigravityBackend", "create"]


def create(config: AntigravityConfig) -> AntigravityBackend:
    """`AntigravityBackend` from its validated block (what the registry's spec calls)."""
    return AntigravityBackend(config)


SPEC = BackendSpec("antigravity", AntigravityConfig, create)
"""What the registry resolves `"backend": "antigravity"` to."""
