"""What a SendMessage asks of conversation control (docs/protocol.md#conversation-control):
its `a2aWrapper` metadata, read once here into a `Control`, and the turn it asks for checked
against what callers may choose.

The request's `metadata.a2aWrapper` wins; without one, the message's
`message.metadata.a2aWrapper` is read. Keys: `delivery` ("steer" | "queue"), `forkFrom` (a
contextId of the same principal), `model`, `effort`, `mode` ("default" | "plan" | "readOnly").
Other keys are ignored (they may be the daemon's own, or a newer client's).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from core.backend import MODES, NO_OPTIONS, Mode, TurnOptions
from core.backend.control import Capabilities, refused
from core.engine.wrapper_section import WRAPPER_METADATA_KEY
from core.wire.errors import InvalidParamsError
from core.wire.models import SendMessageRequest

Delivery = Literal["steer", "queue"]
DELIVERIES: tuple[Delivery, ...] = ("steer", "queue")


@dataclass(frozen=True)
class Control:
    """What one message asked for. `where`: the field path its values came from (for the
    caller's errors)."""

    delivery: Delivery | None = None
    fork_from: str | None = None
    options: TurnOptions = NO_OPTIONS
    where: str = f"metadata.{WRAPPER_METADATA_KEY}"


NO_CONTROL = Control()


@dataclass(frozen=True)
class TurnSetup:
    """What admission decided for the turn beyond its message: the options it runs with, and
    the context and session it forks (a new context's first turn with `forkFrom`)."""

    options: TurnOptions = NO_OPTIONS
    fork_from: str | None = None
    fork_of: str | None = None


NO_SETUP = TurnSetup()


def control_of(request: SendMessageRequest) -> Control:
    """The request's `a2aWrapper` options (InvalidParams naming the field when one is not a
    value this daemon knows)."""
    for where, metadata in (
        ("metadata", request.metadata),
        ("message.metadata", request.message.metadata),
    ):
        raw = (metadata or {}).get(WRAPPER_METADATA_KEY)
        if raw is not None:
            return _parsed(raw, f"{where}.{WRAPPER_METADATA_KEY}")
    return NO_CONTROL


def _parsed(raw: object, where: str) -> Control:
    if not isinstance(raw, Mapping):
        raise _invalid([(where, "an object")])
    problems: list[tuple[str, str]] = []

    def text(key: str, allowed: tuple[str, ...] | None = None) -> str | None:
        value: Any = raw.get(key)
        if value is None:
            return None
        if allowed is not None and value not in allowed:
            problems.append((f"{where}.{key}", "one of " + ", ".join(f'"{v}"' for v in allowed)))
            return None
        if not isinstance(value, str) or not value.strip():
            problems.append((f"{where}.{key}", "a non-empty string"))
            return None
        return value

    delivery = text("delivery", DELIVERIES)
    fork_from = text("forkFrom")
    options = TurnOptions(text("model"), text("effort"), cast(Mode | None, text("mode", MODES)))
    if problems:
        raise _invalid(problems)
    return Control(cast(Delivery | None, delivery), fork_from, options, where)


def turn_options(control: Control, allowed: Capabilities, defaults: TurnOptions) -> TurnOptions:
    """The options the turn runs with: what the message chose, each checked against what
    callers may choose (`allowed`; InvalidParams naming what is), else the default."""
    problems = refused(control.options, allowed)
    if problems:
        raise _invalid([(f"{control.where}.{field}", text) for field, text in problems])
    chosen = control.options
    return TurnOptions(
        chosen.model or defaults.model,
        chosen.effort or defaults.effort,
        chosen.mode or defaults.mode,
    )


def _invalid(problems: list[tuple[str, str]]) -> InvalidParamsError:
    return InvalidParamsError(
        "; ".join(f"{field}: {text}" for field, text in problems), violations=problems
    )
