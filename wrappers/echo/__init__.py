"""The `echo` agent: answers with what it is sent, with no model, credentials or network.

For trying the daemon (`make run`, the README's first example, the container image's smoke
test) and for testing a deployment: it streams its answer, honours cancel, asks a question
and edits a file in its working directory when told to (docs/backends.md#echo). Modules:
`config` (the block), `commands` (what a message asks for), `backend` (the `Backend`).
"""

from __future__ import annotations

from core.backend.spec import BackendSpec
from wrappers.echo.backend import EchoBackend
from wrappers.echo.config import EchoConfig

__all__ = ["SPEC", "EchoBackend", "create"]


def create(config: EchoConfig) -> EchoBackend:
    """`EchoBackend` from its validated block (what the registry's spec calls)."""
    return EchoBackend(config)


SPEC = BackendSpec("echo", EchoConfig, create)
"""What the registry resolves `"backend": "echo"` to."""
