"""Maps a config's `backend` name to a backend factory.

Built-in names resolve lazily to their wrapper package; anything of the form
`package.module:attr` is imported as a third-party backend. A built-in factory is called with its
validated config block (`core.backend.config`); a third-party one with the `options` dict. Either
returns a `Backend`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from core.backend import Backend

BackendFactory = Callable[[Any], Backend]

BUILTIN: dict[str, str] = {
    "claude": "wrappers.claude:create",
    "codex": "wrappers.codex:create",
    "opencode": "wrappers.opencode:create",
    "copilot": "wrappers.copilot:create",
}


class UnknownBackendError(LookupError):
    pass


def resolve(name: str) -> BackendFactory:
    target = BUILTIN.get(name, name)
    if ":" not in target:
        known = ", ".join(sorted(BUILTIN)) or "none yet"
        raise UnknownBackendError(
            f"unknown backend {name!r} (built-in: {known}; or use 'package.module:attr')"
        )
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        factory = getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise UnknownBackendError(f"cannot load backend {target!r}: {exc}") from exc
    if not callable(factory):
        raise UnknownBackendError(f"backend {target!r} is not callable")
    return factory  # type: ignore[no-any-return]


def create_backend(name: str, options: Any) -> Backend:
    """Build the backend `name` from its config (the validated block for a built-in one)."""
    backend = resolve(name)(options)
    if not isinstance(backend, Backend):
        raise UnknownBackendError(f"backend {name!r} does not implement core.backend.Backend")
    return backend
