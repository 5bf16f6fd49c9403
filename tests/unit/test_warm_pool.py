"""core.backend.pool.WarmPool: one clock, warmIdle in ms, LRU beyond maxWarm, idle expiry,
busy entries never evicted."""

from __future__ import annotations

import anyio

from core.backend.pool import WarmPool


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pool(clock: Clock, *, max_warm: int = 8, warm_idle_ms: int = 600_000) -> WarmPool[str, str]:
    return WarmPool(max_warm=max_warm, warm_idle_ms=warm_idle_ms, clock=clock)


def test_a_warm_entry_is_taken_again_and_marked_busy() -> None:
    warm = pool(Clock())
    warm.add("a", "client-a")
    warm.release("a")

    assert warm.take("a") == "client-a"
    assert warm.busy("a")
    assert warm.take("cold") is None


def test_idle_entries_expire_after_warm_idle_in_ms_busy_ones_never() -> None:
    clock = Clock()
    warm = pool(clock, warm_idle_ms=600_000)
    warm.add("idle", "i")
    warm.release("idle")
    warm.add("busy", "b")

    assert warm.next_expiry() == 600
    clock.now += 599
    assert warm.expired() == []
    clock.now += 1
    assert warm.expired() == ["i"]
    assert warm.keys() == ["busy"]
    assert warm.next_expiry() is None


def test_warm_idle_zero_never_expires() -> None:
    clock = Clock()
    warm = pool(clock, warm_idle_ms=0)
    warm.add("a", "a")
    warm.release("a")
    clock.now += 10**9

    assert warm.expired() == []
    assert warm.next_expiry() is None


def test_beyond_max_warm_the_least_recently_used_idle_entry_goes() -> None:
    clock = Clock()
    warm = pool(clock, max_warm=2)
    for key in ("old", "mid"):
        warm.add(key, key)
        warm.release(key)
        clock.now += 1
    warm.take("old")  # used again: now the most recent
    warm.release("old")

    assert warm.add("new", "new") == ["mid"]
    assert warm.keys() == ["old", "new"]


def test_busy_entries_are_kept_even_beyond_max_warm() -> None:
    warm = pool(Clock(), max_warm=1)
    warm.add("a", "a")

    assert warm.add("b", "b") == []
    assert sorted(warm.keys()) == ["a", "b"]
    warm.release("a")
    assert warm.add("c", "c") == ["a"]


def test_remove_and_drain() -> None:
    warm = pool(Clock())
    warm.add("a", "a")
    warm.add("b", "b")

    assert warm.remove("a") == "a"
    assert warm.remove("a") is None
    assert "a" not in warm
    assert warm.drain() == ["b"]
    assert len(warm) == 0


async def test_evict_forever_closes_what_expires_and_wakes_on_a_release() -> None:
    closed: list[list[str]] = []
    gone = anyio.Event()

    async def close(values: list[str]) -> None:
        closed.append(values)
        gone.set()

    warm: WarmPool[str, str] = WarmPool(max_warm=8, warm_idle_ms=1)
    warm.add("a", "a")
    async with anyio.create_task_group() as tg:
        tg.start_soon(warm.evict_forever, close)
        await anyio.wait_all_tasks_blocked()
        assert closed == [], "a busy entry is never evicted"
        warm.release("a")
        with anyio.fail_after(5):
            await gone.wait()
        tg.cancel_scope.cancel()

    assert closed == [["a"]]
