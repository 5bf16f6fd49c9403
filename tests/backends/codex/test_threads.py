"""Warm-thread bookkeeping: idle expiry, the maxWarm bound, busy threads never evicted."""

from __future__ import annotations

from wrappers.codex.threads import WarmThreads


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def pool(clock: Clock, *, max_warm: int = 8, warm_idle: float = 600) -> WarmThreads:
    return WarmThreads(max_warm=max_warm, warm_idle=warm_idle, clock=clock)


def test_a_warm_thread_is_taken_again_and_marked_busy() -> None:
    threads = pool(Clock())
    threads.add("a", "gpt-5.5")
    threads.release("a")

    taken = threads.take("a")

    assert taken is not None
    assert taken.busy
    assert taken.model == "gpt-5.5"
    assert threads.take("cold") is None


def test_idle_threads_expire_after_warm_idle_busy_ones_never() -> None:
    clock = Clock()
    threads = pool(clock, warm_idle=600)
    threads.add("idle", None)
    threads.release("idle")
    threads.add("busy", None)

    assert threads.next_expiry() == 600
    clock.now += 599
    assert threads.expired() == []
    clock.now += 1
    assert threads.expired() == ["idle"]
    assert threads.ids() == ["busy"]
    assert threads.next_expiry() is None


def test_warm_idle_zero_never_expires() -> None:
    clock = Clock()
    threads = pool(clock, warm_idle=0)
    threads.add("a", None)
    threads.release("a")
    clock.now += 10**9

    assert threads.expired() == []
    assert threads.next_expiry() is None


def test_beyond_max_warm_the_least_recently_used_idle_thread_goes() -> None:
    clock = Clock()
    threads = pool(clock, max_warm=2)
    for thread_id in ("old", "recent"):
        threads.add(thread_id, None)
        threads.release(thread_id)
        clock.now += 1
    threads.take("old")
    threads.release("old")

    _, evicted = threads.add("new", None)

    assert evicted == ["recent"]
    assert threads.ids() == ["old", "new"]


def test_busy_threads_may_exceed_max_warm() -> None:
    threads = pool(Clock(), max_warm=1)
    threads.add("a", None)

    _, evicted = threads.add("b", None)

    assert evicted == []
    assert len(threads) == 2


def test_removed_threads_are_cold() -> None:
    threads = pool(Clock())
    threads.add("a", None)

    assert threads.remove("a")
    assert not threads.remove("a")
    assert "a" not in threads
