"""Which Codex threads are loaded (warm) in the app-server, and which to unload.

Bookkeeping only, no I/O: the backend asks what to evict and unloads those threads itself. A
thread taking a turn is never evicted; idle ones go after `warm_idle` seconds, and the least
recently used idle ones go when more than `max_warm` are loaded.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class WarmThread:
    id: str
    model: str | None
    last_used: float
    busy: bool = False


class WarmThreads:
    def __init__(self, *, max_warm: int, warm_idle: float, clock: Callable[[], float]) -> None:
        self._threads: OrderedDict[str, WarmThread] = OrderedDict()
        self._max_warm = max_warm
        self._warm_idle = warm_idle
        self._clock = clock

    def __len__(self) -> int:
        return len(self._threads)

    def __contains__(self, thread_id: object) -> bool:
        return thread_id in self._threads

    def ids(self) -> list[str]:
        return list(self._threads)

    def take(self, thread_id: str) -> WarmThread | None:
        """The warm thread `thread_id`, marked busy and most recently used; None if cold."""
        thread = self._threads.get(thread_id)
        if thread is not None:
            thread.busy = True
            thread.last_used = self._clock()
            self._threads.move_to_end(thread_id)
        return thread

    def add(self, thread_id: str, model: str | None) -> tuple[WarmThread, list[str]]:
        """Register a thread just started or resumed (busy); returns it and the ids of idle
        threads to unload because the pool is over `max_warm`."""
        thread = WarmThread(thread_id, model, self._clock(), busy=True)
        self._threads[thread_id] = thread
        self._threads.move_to_end(thread_id)
        over = len(self._threads) - self._max_warm
        evicted = [t.id for t in self._threads.values() if not t.busy][: max(over, 0)]
        for evicted_id in evicted:
            del self._threads[evicted_id]
        return thread, evicted

    def release(self, thread_id: str) -> None:
        """The thread's turn ended: idle from now."""
        thread = self._threads.get(thread_id)
        if thread is not None:
            thread.busy = False
            thread.last_used = self._clock()

    def remove(self, thread_id: str) -> bool:
        return self._threads.pop(thread_id, None) is not None

    def clear(self) -> None:
        self._threads.clear()

    def expired(self) -> list[str]:
        """Remove and return the idle threads unused for `warm_idle` (0 = never)."""
        if self._warm_idle <= 0:
            return []
        now = self._clock()
        gone = [
            t.id
            for t in self._threads.values()
            if not t.busy and now - t.last_used >= self._warm_idle
        ]
        for thread_id in gone:
            del self._threads[thread_id]
        return gone

    def next_expiry(self) -> float | None:
        """Seconds until the next idle thread expires, None if none can."""
        if self._warm_idle <= 0:
            return None
        idle = [t.last_used for t in self._threads.values() if not t.busy]
        if not idle:
            return None
        return max(0.0, min(idle) + self._warm_idle - self._clock())
