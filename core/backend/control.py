"""Conversation control: what a backend can do beyond running one turn at a time (steer a
running turn, fork a session, take a model, an effort or a mode per message), and how the
engine asks for it.

A backend declares its `Capabilities` (from what its agent reports where it can: ACP config
options, Codex's model list; otherwise from what the backend knows of its agent). The engine
publishes them on the agent card, checks each message's options against them before a turn
is admitted, and only then hands the backend a `Turn` with `options` or `fork_of` set, or
calls `steer`. So a backend never receives what it did not declare.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # the kit's package imports this module for Turn's fields
    from core.backend import Content, Turn

Mode = Literal["default", "plan", "readOnly"]
MODES: tuple[Mode, ...] = ("default", "plan", "readOnly")
"""`plan`: the agent plans and answers, it does not edit; `readOnly`: it may read and run
read-only tools, it does not edit. Both really prevent edits, by the agent's own mechanism
(a permission mode, a sandbox policy, a read-only agent profile)."""


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


@dataclass(frozen=True)
class TurnOptions:
    """What one message chose for its turn only (None: the configured value). The engine
    has checked each value against the backend's `Capabilities`."""

    model: str | None = None
    effort: str | None = None
    mode: Mode | None = None

    @property
    def chosen(self) -> bool:
        return self.model is not None or self.effort is not None or self.mode is not None


NO_OPTIONS = TurnOptions()


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


def capabilities_of(backend: object) -> Capabilities:
    """The backend's declared capabilities (none declared: plain turns only)."""
    if isinstance(backend, Declaring):
        return backend.capabilities()
    return Capabilities()


def options_record(options: TurnOptions) -> Mapping[str, Any]:
    """`options` as the task's metadata shows them (only what was chosen)."""
    return {
        k: v
        for k, v in (("model", options.model), ("effort", options.effort), ("mode", options.mode))
        if v is not None
    }
