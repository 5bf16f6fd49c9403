"""The engine's section of the settings: every knob the task service reads, in its own units
(seconds, timedelta), frozen. `core.settings.sections.engine_config` builds it; tests build it
directly."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from core.backend import NO_OPTIONS, TurnOptions
from core.backend.control import Capabilities

OutputMode = Literal["final", "stream"]


@dataclass(frozen=True)
class Limits:
    max_queued_turns: int = 16  # behind the running turn, per context
    max_concurrent_turns: int = 8
    max_concurrent_turns_per_principal: int = 0  # 0 = no own limit
    max_waiting_turns: int = 256  # waiting for a turn slot, daemon-wide
    max_parts: int = 64
    max_file_bytes: int = 8 * 1024 * 1024


@dataclass(frozen=True)
class Timeouts:
    turn: float | None = None  # s; None = no limit
    idle: float | None = None
    cancel: float = 10.0
    shutdown: float = 10.0

    @property
    def stop_bound(self) -> float:
        """A stopped turn ends within this: closing the backend's generator and interrupt()
        are each bounded by the cancel timeout, so a wait this long ends on the final state."""
        return 2 * self.cancel + 1


@dataclass(frozen=True)
class Output:
    mode: OutputMode = "final"
    progress: bool = True
    reasoning: bool = False
    debug_errors: bool = False


@dataclass(frozen=True)
class Approvals:
    mode: Literal["policy", "ask"] = "policy"
    timeout: float | None = None  # s; None = wait as long as the turn may
    on_timeout: Literal["deny", "fail"] = "deny"


@dataclass(frozen=True)
class Retention:
    tasks: timedelta | None = None  # None = keep terminal tasks forever
    sweep_interval: float = 3600.0  # s; 0 = sweep only at start
    session_sweep_interval: float = 0.0  # s; 0 = no session sweep


def _as_declared(declared: Capabilities) -> Capabilities:
    return declared


@dataclass(frozen=True)
class TurnOptionRules:
    """The operator's `turnOptions`: `allowed` narrows what the backend declares to what
    callers may choose; `defaults` is what a turn runs with for each option it does not
    choose."""

    allowed: Callable[[Capabilities], Capabilities] = _as_declared
    defaults: TurnOptions = NO_OPTIONS


@dataclass(frozen=True)
class EngineConfig:
    limits: Limits = field(default_factory=Limits)
    timeouts: Timeouts = field(default_factory=Timeouts)
    output: Output = field(default_factory=Output)
    approvals: Approvals = field(default_factory=Approvals)
    retention: Retention = field(default_factory=Retention)
    turn_options: TurnOptionRules = field(default_factory=TurnOptionRules)
