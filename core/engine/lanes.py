"""Per-(principal, contextId) turn lanes: one turn at a time per context, FIFO, bounded.

A coding-agent session cannot take two turns at once, so turns of one context queue here;
turns of different contexts run in parallel.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from core.engine.gate import Gate
from core.wire.errors import BusyError


class LaneFullError(BusyError):
    default_message = "Too many turns are queued for this context; retry later"


@dataclass
class Lane:
    gate: Gate = field(default_factory=lambda: Gate(1))
    holders: int = 0


class TurnLanes:
    def __init__(self, max_queued: int = 16) -> None:
        self._lanes: dict[tuple[str, str], Lane] = {}
        self._max_queued = max_queued

    def reserve(self, principal: str, context_id: str) -> Lane:
        """Take a place in the lane now (raising LaneFullError when the queue is full)."""
        key = (principal, context_id)
        lane = self._lanes.setdefault(key, Lane())
        if lane.holders > self._max_queued:
            raise LaneFullError
        lane.holders += 1
        return lane

    def leave(self, principal: str, context_id: str, lane: Lane) -> None:
        """Give up a place taken with `reserve()` (done by `turn()`; call it only if the turn
        never starts)."""
        lane.holders -= 1
        key = (principal, context_id)
        if lane.holders == 0 and self._lanes.get(key) is lane:
            del self._lanes[key]

    @asynccontextmanager
    async def turn(self, principal: str, context_id: str, lane: Lane) -> AsyncIterator[None]:
        """Wait for the lane reserved with `reserve()`, hold it for the body, then leave."""
        try:
            async with lane.gate:
                yield
        finally:
            self.leave(principal, context_id, lane)
