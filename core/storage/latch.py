"""A one-way flag that can be awaited: a run's `settled` and `finished`, a store call's wake.

Most are never awaited (nobody waits for a run's `finished` unless cancelling, `settled` only
under a blocking send, a store call's wake only when another call leads its batch), so the
anyio Event behind one is made only when someone waits on it while it is not set yet.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel


class Latch:
    __slots__ = ("_event", "_set")

    def __init__(self, *, is_set: bool = False) -> None:
        self._set = is_set
        self._event: anyio.Event | None = None

    def set(self) -> None:
        self._set = True
        if self._event is not None:
            self._event.set()

    def is_set(self) -> bool:
        return self._set

    async def wait(self) -> None:
        if self._set:
            # Still a checkpoint, as anyio's Event.wait is: a cancelled waiter hears of it.
            await anyio.lowlevel.checkpoint()
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()
