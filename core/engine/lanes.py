"""Per-(principal, contextId) turn lanes: one turn at a time per context, FIFO, bounded.

A coding-agent session cannot take two turns at once, so turns of one context queue here;
turns of different contexts run in parallel. The lane is the one owner of a context's queue:
which task holds it and which wait behind it, in order (what a waiting task's
`a2aWrapper.queue` says).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from pydantic import JsonValue

from core.engine.gate import Gate
from core.wire.errors import BusyError


class LaneFullError(BusyError):
    default_message = "Too many turns are queued for this context; retry later"


@dataclass
class Lane:
    gate: Gate = field(default_factory=lambda: Gate(1))
    # The tasks with a place, in order: the first holds the lane (or is next to), the others wait.
    order: list[str] = field(default_factory=list)

    @property
    def holders(self) -> int:
        return len(self.order)

    def queue_of(self, task_id: str) -> dict[str, JsonValue] | None:
        """Where `task_id` waits, as its task's `a2aWrapper.queue` says: `position` (1 = next
        to run) and the tasks `ahead` of it; None when it is first (its turn runs, or is about
        to)."""
        index = self.order.index(task_id) if task_id in self.order else 0
        return {"position": index, "ahead": list(self.order[:index])} if index else None


class TurnLanes:
    def __init__(self, max_queued: int = 16) -> None:
        self._lanes: dict[tuple[str, str], Lane] = {}
        self._max_queued = max_queued

    def reserve(self, principal: str, context_id: str, task_id: str = "") -> Lane:
        """Take a place in the lane now, last in line (raising LaneFullError when the queue is
        full)."""
        key = (principal, context_id)
        lane = self._lanes.setdefault(key, Lane())
        if lane.holders > self._max_queued:
            raise LaneFullError
        lane.order.append(task_id)
        return lane

    def busy(self, principal: str, context_id: str) -> bool:
        """Whether a turn of the context runs or waits."""
        return (principal, context_id) in self._lanes

    def leave(self, principal: str, context_id: str, lane: Lane, task_id: str = "") -> None:
        """Give up a place taken with `reserve()` (done by `turn()`; call it only if the turn
        never starts)."""
        lane.order.remove(task_id)
        key = (principal, context_id)
        if not lane.order and self._lanes.get(key) is lane:
            del self._lanes[key]

    @asynccontextmanager
    async def turn(
        self, principal: str, context_id: str, lane: Lane, task_id: str = ""
    ) -> AsyncIterator[None]:
        """Wait for the lane reserved with `reserve()`, hold it for the body, then leave."""
        try:
            async with lane.gate:
                yield
        finally:
            self.leave(principal, context_id, lane, task_id)
