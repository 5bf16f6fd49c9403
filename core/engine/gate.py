"""A FIFO gate with a number of places: a context's lane (one place) and the daemon's and each
principal's turn slots (`server.maxConcurrentTurns`, `maxConcurrentTurnsPerPrincipal`).

Why not anyio's Lock and CapacityLimiter: every turn passes up to three of them, and each
yields to the event loop on entry even when a place is free, and is built through anyio's
backend lookup; on the hot path that was a loop pass and a lookup per gate per turn. Here a
free place is taken at once, and a freed place goes straight to the oldest waiter, so a turn
that arrives later never overtakes one that waits. A waiter waits on a bare future of the
running loop (the daemon runs on asyncio), not an anyio Event built through that lookup: under
load most turns wait at the daemon's gate.
"""

from __future__ import annotations

import asyncio
from collections import deque
from contextlib import suppress
from types import TracebackType


class Gate:
    __slots__ = ("_free", "_waiters")

    def __init__(self, places: int) -> None:
        self._free = places
        self._waiters: deque[asyncio.Future[None]] = deque()

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiters:
            self._free -= 1
            return
        handed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(handed)
        try:
            await handed
        except BaseException:
            if handed.done() and not handed.cancelled():
                # A place was handed over as this waiter was cancelled: pass it on.
                self._leave()
            else:
                # `_leave` drops a waiter cancelled in the same step from the queue itself.
                with suppress(ValueError):
                    self._waiters.remove(handed)
            raise

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._leave()

    def _leave(self) -> None:
        while self._waiters:
            handed = self._waiters.popleft()
            if not handed.done():  # not cancelled in this very step
                handed.set_result(None)
                return
        self._free += 1
