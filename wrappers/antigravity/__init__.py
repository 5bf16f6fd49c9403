"""Google Antigravity backend: the `google-antigravity` SDK and the `localharness` runtime its
wheel bundles.

Modules: `config` (the block), `harness` (the runtime binary, started under the kit's orphan
guard), `options` (the SDK's agent config from the block), `session` (one live agent and its
turn), `approvals` (the pre-tool hook: capability switches and the caller's answers), `events`
(the pure step mapping), `diagnose` (`a2a-wrapper check`), `backend` (the `Backend` itself),
`resume` (a conversation in a terminal).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.backend.spec import BackendSpec
from wrappers.antigravity.config import AntigravityConfig

if TYPE_CHECKING:
    from wrappers.antigravity.backend import AntigravityBackend

__all__ = ["SPEC", "create"]


def create(config: AntigravityConfig) -> AntigravityBackend:
    """`AntigravityBackend` from its validated block (what the registry's spec calls)."""
    # Here, not at the top: importing the package (for its config) must not import the SDK.
    from wrappers.antigravity.backend import AntigravityBackend  # noqa: PLC0415

    return AntigravityBackend(config)


SPEC = BackendSpec("antigravity", AntigravityConfig, create)
"""What the registry resolves `"backend": "antigravity"` to."""
