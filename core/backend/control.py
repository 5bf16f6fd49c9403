"""Conversation control: what a backend can do beyond running one turn at a time (steer a
running turn, fork a session, take a model, an effort or a mode per message), and how the
engine asks for it.

A backend declares its `Capabilities` (from what its agent reports where it can: the config
options or model list its protocol offers; otherwise from what the backend knows of its
agent). The engine publishes them on the agent card, checks each message's options
against them before a turn is admitted, and only then hands the backend a `Turn` with
`options` or `fork_of` set, or calls `steer`. So a backend never receives what it did not declare.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol, TypeVar, runtime_checkable

from core.backend import NO_OPTIONS, Content, Mode, Turn, TurnOptions

__all__ = ["NO_OPTIONS", "Mode", "TurnOptions"]

T = TypeVar("T")


@dataclass(frozen=True)
class Capabilities:
    """What one backend's agent can do, as the card's conversation-control extension says.

    `models`: the model names a message may choose; None = any name (the agent checks it;
    the operator's allow-list, if any, is what callers may use); () = none (the model is
    the configured one only). `efforts`, `modes`: the values a message may choose ("default"
    is always among the modes). `steer`: a message can be delivered into a running turn
    (`Steerable`); `fork`: a new context can start from a native fork of another context's
    session (`Turn.fork_of`)."""

    steer: bool = False
    fork: bool = False
    models: tuple[str, ...] | None = ()
    efforts: tuple[str, ...] = ()
    modes: tuple[Mode, ...] = ("default",)
    approvals: bool = False
    resume: bool = False
    image_input: bool = False

    def record(self) -> dict[str, Any]:
        """The JSON record the card publishes (the extension's params)."""
        return {
            "steer": self.steer,
            "fork": self.fork,
            "models": None if self.models is None else list(self.models),
            "efforts": list(self.efforts),
            "modes": list(self.modes),
            "approvals": self.approvals,
            "resume": self.resume,
            "imageInput": self.image_input,
        }


class SteerRefusedError(RuntimeError):
    """The running turn cannot take a message now (it is ending, or the agent refused it).
    `str()` is for the log; the engine answers the caller with UnsupportedOperation and
    names `delivery: "queue"`."""


@runtime_checkable
class Steerable(Protocol):
    """A backend whose running turns take more user input (declared by `steer=True`)."""

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        """Deliver `parts` into the running turn `turn` (the engine's Turn of that turn,
        with its bound `session_id`): the agent sees them before its next model request and
        the turn goes on (it ends once, as usual). Raise SteerRefusedError when it cannot."""
        ...


@runtime_checkable
class Declaring(Protocol):
    """A backend that declares what it can do (a backend without it declares nothing:
    `Capabilities()`, i.e. plain turns only)."""

    def capabilities(self) -> Capabilities:
        """What the backend can do now (after `start()` it may include what the agent
        reported; before it, what the backend knows of its agent)."""
        ...


NO_CAPABILITIES = Capabilities()


def capabilities_of(backend: object) -> Capabilities:
    """The backend's declared capabilities (none declared: plain turns only)."""
    return declaration_of(backend)()


def declaration_of(backend: object) -> Callable[[], Capabilities]:
    """What asks `backend` for its capabilities now (they may change once it started): for
    a caller that asks on every message, so the protocol check runs once."""
    if isinstance(backend, Declaring):
        return backend.capabilities
    return lambda: NO_CAPABILITIES


def options_record(options: TurnOptions) -> Mapping[str, Any]:
    """`options` as the task's metadata shows them (only what was chosen)."""
    return {
        k: v
        for k, v in (("model", options.model), ("effort", options.effort), ("mode", options.mode))
        if v is not None
    }


def narrowed(
    declared: Capabilities,
    *,
    models: tuple[str, ...] | None = None,
    efforts: tuple[str, ...] | None = None,
    modes: tuple[Mode, ...] | None = None,
) -> Capabilities:
    """What callers may choose: `declared` narrowed by the operator's allow-lists (None: no
    list). A backend taking any model name (`models is None`) takes the allow-list as it is;
    "default" stays among the modes."""
    if models is not None:
        models = models if declared.models is None else _kept(declared.models, models)
    else:
        models = declared.models
    return replace(
        declared,
        models=models,
        efforts=declared.efforts if efforts is None else _kept(declared.efforts, efforts),
        modes=declared.modes
        if modes is None
        else ("default", *(m for m in _kept(declared.modes, modes) if m != "default")),
    )


def _kept(declared: tuple[T, ...], allowed: tuple[T, ...]) -> tuple[T, ...]:
    return tuple(v for v in declared if v in allowed)


def refused(options: TurnOptions, allowed: Capabilities) -> list[tuple[str, str]]:
    """Each chosen value `allowed` does not offer, as (field, what is allowed) for the
    caller's InvalidParams (empty: all of them are fine)."""
    problems: list[tuple[str, str]] = []
    models = allowed.models
    if options.model is not None and models is not None and options.model not in models:
        problems.append(("model", _one_of(models, "the configured model only")))
    if options.effort is not None and options.effort not in allowed.efforts:
        problems.append(("effort", _one_of(allowed.efforts, "no effort can be chosen")))
    if options.mode is not None and options.mode not in allowed.modes:
        problems.append(("mode", _one_of(allowed.modes, "default only")))
    return problems


def _one_of(values: tuple[str, ...], none: str) -> str:
    return "one of " + ", ".join(repr(v) for v in values) if values else none
