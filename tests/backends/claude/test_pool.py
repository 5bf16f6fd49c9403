"""The warm-client policy: which clients to retire, and when (no processes involved)."""

from __future__ import annotations

from claude_agent_sdk import ClaudeSDKClient

from wrappers.claude.pool import WarmClient, WarmPool


def warm(context: str, *, last_used: float = 0.0, session: str | None = None) -> WarmClient:
    # A client that was never connected: the pool only keeps it, never talks to it.
    client = WarmClient(("p", context), ClaudeSDKClient(), pid=None, session_id=session)
    client.last_used = last_used
    return client


def test_beyond_max_warm_the_least_recently_used_idle_clients_go() -> None:
    pool = WarmPool(max_warm=2, idle_seconds=None)
    a, b, c = warm("a"), warm("b"), warm("c")
    assert pool.add(a) == []
    assert pool.add(b) == []
    pool.checkout(a, "task-a")
    pool.release(a)  # a is now more recent than b

    assert pool.add(c) == [b]
    assert (pool.get(("p", "a")), pool.get(("p", "b")), pool.get(("p", "c"))) == (a, None, c)


def test_a_busy_client_is_never_pushed_out() -> None:
    pool = WarmPool(max_warm=1, idle_seconds=None)
    a, b = warm("a"), warm("b")
    pool.add(a)
    pool.checkout(a, "task-a")

    pool.checkout(b, "task-b")
    assert pool.add(b) == []
    assert len(pool) == 2, "over the limit until a turn ends"


def test_idle_clients_expire_after_the_idle_time() -> None:
    pool = WarmPool(max_warm=8, idle_seconds=10)
    old, recent, busy = warm("old", last_used=100), warm("recent", last_used=105), warm("busy")
    for client in (old, recent, busy):
        pool.add(client)
    pool.checkout(busy, "task")

    assert pool.next_expiry() == 110
    assert pool.expired(109.9) == []
    assert pool.expired(110) == [old]
    assert pool.next_expiry() == 115
    assert pool.expired(1_000) == [recent]
    assert pool.next_expiry() is None
    assert pool.get(("p", "busy")) is busy


def test_without_an_idle_time_clients_stay() -> None:
    pool = WarmPool(max_warm=8, idle_seconds=None)
    pool.add(warm("a"))
    assert pool.next_expiry() is None
    assert pool.expired(10**9) == []


def test_lookup_by_session_remove_and_drain() -> None:
    pool = WarmPool(max_warm=8, idle_seconds=None)
    a, b = warm("a", session="s1"), warm("b", session="s2")
    pool.add(a)
    pool.add(b)

    assert pool.with_session("s2") == [b]
    assert pool.remove(a) is True
    assert pool.remove(a) is False
    assert pool.drain() == [b]
    assert len(pool) == 0
