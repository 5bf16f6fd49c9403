"""Which backends exist, and how a config's `backend` value becomes one.

This is the only list of built-in backends. A name resolves, first match wins, to:

1. a built-in (`BUILTIN`: name -> "package.module:attr" of its `BackendSpec`, imported lazily,
   so importing core imports no wrapper);
2. an installed package's entry point in the group `a2a_wrapper.backends`
   (`fifth = "my_pkg:SPEC"` under `[project.entry-points."a2a_wrapper.backends"]`);
3. `package.module:attr` written in the config: a `BackendSpec`, or a plain factory taking the
   `options` dict (the older third-party form).

A spec's backend gets its config block (the top-level key named after it), validated by the
spec's model; a plain factory gets `options`. Either returns a `Backend`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from core.backend import Backend
from core.backend.spec import BackendSpec

BackendFactory = Callable[[Any], Backend]

BUILTIN: dict[str, str] = {
    "claude": "wrappers.claude:SPEC",
    "codex": "wrappers.codex:SPEC",
    "opencode": "wrappers.opencode:SPEC",
    "copilot": "wrappers.copilot:SPEC",
    "antigravity": "wrappers.antigravity:SPEC",
    "acp": "wrappers.acp:SPEC",
    "gemini": "wrappers.acp:GEMINI_SPEC",
    "opencode-acp": "wrappers.acp:OPENCODE_SPEC",
    "copilot-acp": "wrappers.acp:COPILOT_SPEC",
}
ENTRY_POINT_GROUP = "a2a_wrapper.backends"


class UnknownBackendError(LookupError):
    pass


def _installed() -> dict[str, str]:
    """Entry points of the group (read each time: a test may install one on sys.path)."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    """Every backend known by name: the built-ins, then the installed ones."""
    return [*BUILTIN, *(n for n in _installed() if n not in BUILTIN)]


def _load(target: str) -> object:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    except (ImportError, AttributeError) as exc:
        raise UnknownBackendError(f"cannot load backend {target!r}: {exc}") from exc


def _target(name: str) -> str:
    target = BUILTIN.get(name) or _installed().get(name) or name
    if ":" not in target:
        known = ", ".join(names())
        raise UnknownBackendError(
            f"unknown backend {name!r} (known: {known}; or use 'package.module:attr')"
        )
    return target


def lookup(name: str) -> BackendSpec[Any] | BackendFactory:
    """What `name` refers to: a BackendSpec, or a plain factory. Raises UnknownBackendError."""
    target = _target(name)
    found = _load(target)
    if isinstance(found, BackendSpec):
        if ":" not in name and found.name != name:
            raise UnknownBackendError(
                f"backend {name!r} ({target}) is a BackendSpec named {found.name!r}"
            )
        return found
    if not callable(found):
        raise UnknownBackendError(f"backend {target!r} is not callable")
    return found


def spec_for(name: str) -> BackendSpec[Any] | None:
    """The spec of `name`, None when it names a plain factory. Raises UnknownBackendError."""
    found = lookup(name)
    return found if isinstance(found, BackendSpec) else None


def specs() -> list[BackendSpec[Any]]:
    """The spec of every backend known by name (the config schema lists their blocks)."""
    return [spec for name in names() if (spec := spec_for(name)) is not None]


def resolve(name: str) -> BackendFactory:
    """The factory of `name`: a spec's `create` (it takes the validated block), or the plain
    factory itself (it takes `options`)."""
    found = lookup(name)
    return found.build if isinstance(found, BackendSpec) else found


def create_backend(name: str, config: Any) -> Backend:
    """Build the backend `name` from its config: the validated block for a spec, `options`
    for a plain factory."""
    backend = resolve(name)(config)
    if not isinstance(backend, Backend):
        raise UnknownBackendError(f"backend {name!r} does not implement core.backend.Backend")
    return backend
