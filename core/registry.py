"""Maps a config's `backend` name to a backend factory.

Built-in names resolve lazily to their wrapper package; anything of the form
`package.module:attr` is imported as a third-party backend. The factory is called with the raw
backend-specific config block (a dict) and returns a `Backend`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from core.backend import Backend

BackendFactory = Callable[[Mapping[str, Any]], Backend]

BUILTIN: dict[str, str] = {}


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


def create_backend(name: str, options: Mapping[str, Any]) -> Backend:
    backend = resolve(name)(options)
    if not isinstance(backend, Backend):
        raise UnknownBackendError(f"backend {name!r} does not implement core.backend.Backend")
    return backend
