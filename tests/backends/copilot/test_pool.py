"""The warm-session pool's rules: LRU beyond maxWarm, idle expiry, running turns never
evicted, a dead CLI's sessions forgotten. (Its use by the backend is covered end to end.)"""

from __future__ import annotations

import math
from pathlib import Path

import anyio
import pytest
from copilot import CopilotClient, RuntimeConnection

from wrappers.copilot.permissions import PermissionPolicy
from wrappers.copilot.runtime import Child
from wrappers.copilot.sessions import SessionPool, WarmSession


@pytest.fixture
def child(copilot_cli: Path) -> Child:
    """A child record for bookkeeping only: the client is never started."""
    client = CopilotClient(connection=RuntimeConnection.for_stdio(path=str(copilot_cli)))
    return Child(client, generation=1)


def warm(pool: SessionPool, child: Child, *names: str) -> list[WarmSession]:
    policy = PermissionPolicy(Path("/srv/a2a-project"))
    sessions = [WarmSession(name, child, policy) for name in names]
    for session in sessions:
        pool.add(session)
    return sessions


def ids(sessions: list[WarmSession]) -> list[str]:
    return [s.session_id for s in sessions]


async def test_beyond_max_warm_the_least_recently_used_idle_sessions_go(child: Child) -> None:
    pool = SessionPool(warm_idle_ms=0, max_warm=2)
    a, _, c = warm(pool, child, "a", "b", "c")
    assert pool.get("a") is a  # a is now the most recently used

    assert ids(pool.take_evictable(anyio.current_time())) == ["b"]
    assert len(pool) == 2
    assert pool.get("b") is None
    assert pool.get("c") is c


async def test_a_session_with_a_running_turn_is_never_evicted(child: Child) -> None:
    pool = SessionPool(warm_idle_ms=1, max_warm=1)
    a, b = warm(pool, child, "a", "b")
    pool.begin(a, "task-1")
    pool.begin(b, "task-2")

    assert pool.take_evictable(anyio.current_time() + 60) == []
    assert pool.for_task("task-2") is b

    pool.end(b)
    assert ids(pool.take_evictable(anyio.current_time() + 60)) == ["b"]
    assert pool.for_task("task-1") is a
    pool.end(a)


async def test_idle_sessions_expire_after_warm_idle(child: Child) -> None:
    pool = SessionPool(warm_idle_ms=10_000, max_warm=8)
    (a,) = warm(pool, child, "a")
    now = anyio.current_time()

    assert pool.next_deadline() == pytest.approx(a.last_used + 10)
    assert pool.take_evictable(now) == []
    assert ids(pool.take_evictable(now + 10)) == ["a"]
    assert pool.next_deadline() == math.inf


async def test_warm_idle_zero_keeps_sessions_until_max_warm(child: Child) -> None:
    pool = SessionPool(warm_idle_ms=0, max_warm=8)
    warm(pool, child, "a")

    assert pool.next_deadline() == math.inf
    assert pool.take_evictable(anyio.current_time() + 10**9) == []


async def test_the_sessions_of_a_dead_cli_are_forgotten_and_their_turns_told(
    child: Child,
) -> None:
    pool = SessionPool(warm_idle_ms=0, max_warm=8)
    (a,) = warm(pool, child, "a")
    turn = pool.begin(a, "task")
    child.returncode = -9
    child.exited.set()

    assert pool.get("a") is None  # a dead child's session is never handed out
    for gone in pool.forget_child(child):
        gone.child_exited()

    assert len(pool) == 0
    assert turn.done.is_set()
    item = turn.receive.receive_nowait()
    assert getattr(item, "returncode", None) == -9
    pool.end(a)


async def test_waiting_for_a_change_wakes_on_add(child: Child) -> None:
    pool = SessionPool(warm_idle_ms=0, max_warm=8)
    woke = anyio.Event()

    async def waiter() -> None:
        await pool.wait_changed(math.inf)
        woke.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(waiter)
        await anyio.wait_all_tasks_blocked()
        warm(pool, child, "a")
        with anyio.fail_after(1):
            await woke.wait()
