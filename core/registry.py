"""Which backends exist, and how a config's `backend` value becomes one.

This is the only list of built-in backends. A name resolves, first match wins, to:

1. a built-in (`BUILTIN`: name -> where its `BackendSpec` and its config model are, and the
   extra that brings its agent SDK), imported lazily, so importing core imports no wrapper;
2. an installed package's entry point in the group `a2a_wrapper.backends`
   (`fifth = "my_pkg:SPEC"` under `[project.entry-points."a2a_wrapper.backends"]`);
3. `package.module:attr` written in the config: a `BackendSpec`, or a plain factory taking the
   `options` dict (the older third-party form).

A spec's backend gets its config block (the top-level key named after it), validated by the
spec's model; a plain factory gets `options`. Either returns a `Backend`.

Loading is lazy in two steps: validating a config (and `a2a-wrapper schema`) imports a
built-in's config model only, never its agent SDK; building the backend (`serve`, `check`)
imports its spec, and with it that one SDK. A missing SDK is one line naming the extra that
brings it (`MissingExtraError`).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from pydantic import BaseModel

from core import DISTRIBUTION
from core.backend import Backend
from core.backend.spec import BackendSpec

BackendFactory = Callable[[Any], Backend]


@dataclass(frozen=True)
class Builtin:
    spec: str
    """`package.module:attr` of its BackendSpec (importing it imports the agent's SDK)."""
    config: str
    """`package.module:attr` of its config model (imports no SDK)."""
    extra: str | None = None
    """The optional dependency (`pip install 'NAME[extra]'`) that brings its SDK."""
    sdk: str | None = None
    """The SDK's top-level module, when the backend cannot run without it."""


BUILTIN: dict[str, Builtin] = {
    "echo": Builtin("wrappers.echo:SPEC", "wrappers.echo.config:EchoConfig"),
    "claude": Builtin(
        "wrappers.claude:SPEC", "wrappers.claude.config:ClaudeConfig", "claude", "claude_agent_sdk"
    ),
    "codex": Builtin("wrappers.codex:SPEC", "wrappers.codex.config:CodexConfig", "codex"),
    "opencode": Builtin("wrappers.opencode:SPEC", "wrappers.opencode.config:OpencodeConfig"),
    "copilot": Builtin(
        "wrappers.copilot:SPEC", "wrappers.copilot.config:CopilotConfig", "copilot", "copilot"
    ),
    "antigravity": Builtin(
        "wrappers.antigravity:SPEC",
        "wrappers.antigravity.config:AntigravityConfig",
        "antigravity",
        "google.antigravity",
    ),
    "acp": Builtin("wrappers.acp:SPEC", "wrappers.acp.config:AcpConfig", "acp", "acp"),
    "gemini": Builtin("wrappers.acp:GEMINI_SPEC", "wrappers.acp.config:GeminiConfig", "acp", "acp"),
    "opencode-acp": Builtin(
        "wrappers.acp:OPENCODE_SPEC", "wrappers.acp.config:OpencodeAcpConfig", "acp", "acp"
    ),
    "copilot-acp": Builtin(
        "wrappers.acp:COPILOT_SPEC", "wrappers.acp.config:CopilotAcpConfig", "acp", "acp"
    ),
}
ENTRY_POINT_GROUP = "a2a_wrapper.backends"


class UnknownBackendError(LookupError):
    pass


class MissingExtraError(UnknownBackendError):
    """A built-in backend whose agent SDK is not installed; the message is the one line that
    says which extra to install."""


@dataclass(frozen=True)
class BlockModel:
    """What validating a config needs of a backend: its block's key and model."""

    name: str
    config_model: type[BaseModel]


def install_command(extra: str) -> str:
    """The command that installs this distribution with `extra`."""
    return f"pip install '{DISTRIBUTION}[{extra}]'"


def _installed() -> dict[str, str]:
    """Entry points of the group (read each time: a test may install one on sys.path)."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def names() -> list[str]:
    """Every backend known by name: the built-ins, then the installed ones."""
    return [*BUILTIN, *(n for n in _installed() if n not in BUILTIN)]


def _load(target: str, name: str | None = None) -> object:
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
        return getattr(module, attr)
    except ModuleNotFoundError as exc:
        raise _missing_extra(name, exc) or UnknownBackendError(
            f"cannot load backend {target!r}: {exc}"
        ) from exc
    except (ImportError, AttributeError) as exc:
        raise UnknownBackendError(f"cannot load backend {target!r}: {exc}") from exc


def _missing_extra(name: str | None, exc: ModuleNotFoundError) -> MissingExtraError | None:
    """The one-line error for a built-in whose SDK (a module outside this project) is missing."""
    builtin = BUILTIN.get(name or "")
    missing = (exc.name or "").partition(".")[0]
    if builtin is None or not builtin.extra or missing in ("core", "wrappers", ""):
        return None
    return MissingExtraError(
        f"backend {name!r} needs its agent SDK ({missing!r} is not installed): "
        f"{install_command(builtin.extra)}"
    )


def require_sdk(name: str) -> None:
    """Raise MissingExtraError when `name` is a built-in whose SDK is not installed (checked
    without importing it, so `serve` says so before it starts anything)."""
    builtin = BUILTIN.get(name)
    if builtin is None or builtin.sdk is None or builtin.extra is None:
        return
    top = builtin.sdk.partition(".")[0]
    found = importlib.util.find_spec(top) is not None
    if found and top != builtin.sdk:
        found = importlib.util.find_spec(builtin.sdk) is not None
    if not found:
        raise MissingExtraError(
            f"backend {name!r} needs its agent SDK ({builtin.sdk!r} is not installed): "
            f"{install_command(builtin.extra)}"
        )


def _target(name: str) -> str:
    builtin = BUILTIN.get(name)
    target = builtin.spec if builtin else _installed().get(name) or name
    if ":" not in target:
        known = ", ".join(names())
        raise UnknownBackendError(
            f"unknown backend {name!r} (known: {known}; or use 'package.module:attr')"
        )
    return target


def lookup(name: str) -> BackendSpec[Any] | BackendFactory:
    """What `name` refers to: a BackendSpec, or a plain factory. Raises UnknownBackendError."""
    target = _target(name)
    found = _load(target, name)
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


def block_for(name: str) -> BlockModel | None:
    """The block key and model of `name`, None for a plain factory. A built-in's comes from
    its config module alone (no SDK is imported). Raises UnknownBackendError."""
    builtin = BUILTIN.get(name)
    if builtin is not None:
        model = _load(builtin.config, name)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise UnknownBackendError(f"backend {name!r}: {builtin.config} is not a model")
        return BlockModel(name, model)
    spec = spec_for(name)
    return None if spec is None else BlockModel(spec.name, spec.config_model)


def blocks() -> list[BlockModel]:
    """The block of every backend known by name (the config schema lists them). An installed
    backend whose package does not load is left out (a config naming it says why)."""
    found = []
    for name in names():
        try:
            block = block_for(name)
        except UnknownBackendError:
            if name in BUILTIN:
                raise
            continue
        if block is not None:
            found.append(block)
    return found


def needs(name: str) -> str | None:
    """What a built-in needs installed beyond the core ("the `acp` extra: pip install ...")."""
    builtin = BUILTIN.get(name)
    if builtin is None or builtin.extra is None:
        return None
    return f"the `{builtin.extra}` extra: {install_command(builtin.extra)}"


def resolve(name: str) -> BackendFactory:
    """The factory of `name`: a spec's `create` (it takes the validated block), or the plain
    factory itself (it takes `options`)."""
    found = lookup(name)
    return found.build if isinstance(found, BackendSpec) else found


def create_backend(name: str, config: Any) -> Backend:
    """Build the backend `name` from its config: the validated block for a spec, `options`
    for a plain factory."""
    factory = resolve(name)
    try:
        # A built-in imports its agent's SDK here (its package's `create`).
        backend = factory(config)
    except ModuleNotFoundError as exc:
        raise _missing_extra(name, exc) or exc from exc
    if not isinstance(backend, Backend):
        raise UnknownBackendError(f"backend {name!r} does not implement core.backend.Backend")
    return backend


def npm_agents() -> dict[str, str]:
    """The agent CLIs that ship on npm only: name -> pinned `package@version`
    (wrappers/npm-agents.txt; `a2a-wrapper agents install` installs them)."""
    from wrappers.pins import NPM_AGENTS  # noqa: PLC0415 - core imports no wrapper until asked

    return dict(NPM_AGENTS)
