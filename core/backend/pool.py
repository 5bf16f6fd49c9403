"""Warm sessions: the live agent sessions (clients, threads, processes) a backend keeps between
turns, and which of them to let go.

One rule for every backend: one clock (monotonic seconds, injectable for tests), one unit for
the config (`warmIdle` in ms, like every duration in the config; 0 = never evicted for
idleness), the least recently used idle entries go beyond `maxWarm`, and an entry taking a
turn (busy) is never evicted. The pool is bookkeeping only: it never awaits anything; it says
what to close and the backend closes it (`evict_forever` runs that loop in `serve`).
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

import anyio

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

Clock = Callable[[], float]


@dataclass(eq=False)
class _Entry(Generic[V]):
    value: V
    last_used: float
    busy: bool


class WarmPool(Generic[K, V]):
    def __init__(self, *, max_warm: int, warm_idle_ms: int, clock: Clock = time.monotonic) -> None:
        self._max_warm = max_warm
        self._idle = warm_idle_ms / 1000 if warm_idle_ms > 0 else math.inf
        self._clock = clock
        self._entries: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> list[K]:
        """Least recently used first."""
        return list(self._entries)

    def values(self) -> list[V]:
        return [e.value for e in self._entries.values()]

    def get(self, key: K) -> V | None:
        entry = self._entries.get(key)
        return None if entry is None else entry.value

    def busy(self, key: K) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.busy

    def take(self, key: K) -> V | None:
        """The warm entry `key`, now busy and most recently used; None when there is none."""
        entry = self._entries.get(key)
        if entry is None:
            return None
        entry.busy, entry.last_used = True, self._clock()
        self._entries.move_to_end(key)
        self._notify()
        return entry.value

    def add(self, key: K, value: V, *, busy: bool = True) -> list[V]:
        """Track `value` as the most recently used (busy: it is about to take a turn); returns
        the idle entries it pushes out beyond `max_warm`, least recently used first."""
        self._entries[key] = _Entry(value, self._clock(), busy)
        self._entries.move_to_end(key)
        over = len(self._entries) - self._max_warm
        out = [k for k, e in self._entries.items() if not e.busy][: max(over, 0)]
        self._notify()
        return [self._entries.pop(k).value for k in out]

    def release(self, key: K) -> None:
        """The entry's turn ended: idle from now."""
        entry = self._entries.get(key)
        if entry is not None:
            entry.busy, entry.last_used = False, self._clock()
            self._notify()

    def remove(self, key: K) -> V | None:
        entry = self._entries.pop(key, None)
        if entry is not None:
            self._notify()
        return None if entry is None else entry.value

    def drain(self) -> list[V]:
        """Remove and return every entry (shutdown)."""
        values = self.values()
        self._entries.clear()
        self._notify()
        return values

    def expired(self) -> list[V]:
        """Remove and return the idle entries unused for `warmIdle`."""
        now = self._clock()
        gone = [
            k for k, e in self._entries.items() if not e.busy and now - e.last_used >= self._idle
        ]
        return [self._entries.pop(k).value for k in gone]

    def next_expiry(self) -> float | None:
        """Seconds until the next idle entry expires; None when none can."""
        idle = [e.last_used for e in self._entries.values() if not e.busy]
        if not idle or math.isinf(self._idle):
            return None
        return max(0.0, min(idle) + self._idle - self._clock())

    async def wait_due(self) -> None:
        """Return when the pool changed or the next idle entry is due."""
        changed = self._changed
        delay = self.next_expiry()
        with anyio.move_on_after(math.inf if delay is None else delay):
            await changed.wait()

    async def evict_forever(self, close: Callable[[list[V]], Awaitable[None]]) -> None:
        """Close the expired entries whenever some are due (run it in `serve`)."""
        while True:
            await self.wait_due()
            expired = self.expired()
            if expired:
                await close(expired)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
