"""Where what comes next hooks into a turn's life: its workspace and its usage.

The engine calls a `TurnHooks` at three fixed points, and nowhere else: `prepare` before the
backend sees the turn (a workspace per context is made ready, and may be named in the turn it
returns), `release` once the turn is over whatever its outcome (the workspace is given back),
and `charge` for every Usage event of the turn (a budget is charged; raising `StopTurnError`
stops the turn). The default does nothing.
"""

from __future__ import annotations

from typing import Protocol

from core.backend import Turn, Usage


class StopTurnError(Exception):
    """Raised by `charge`: the turn must stop now; its task FAILS with `reason` (written for
    the caller), like a turn past its deadline."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TurnHooks(Protocol):
    async def prepare(self, turn: Turn) -> Turn:
        """Before the backend runs `turn` (inside its context's lane, after its session is
        resolved): return the turn to run. Raising fails the task with an error id."""
        ...

    async def release(self, turn: Turn) -> None:
        """After the turn, whatever ended it (shielded from cancellation); must not raise."""
        ...

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        """A Usage event of a turn of `principal` in `context_id`, in the order reported; may
        raise StopTurnError."""
        ...


class NoTurnHooks:
    async def prepare(self, turn: Turn) -> Turn:
        return turn

    async def release(self, turn: Turn) -> None:
        return None

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        return None


NO_TURN_HOOKS: TurnHooks = NoTurnHooks()
