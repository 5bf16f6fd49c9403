"""What Copilot's warm sessions add to the kit's pool (whose rules, LRU beyond maxWarm, idle
expiry and busy never evicted, tests/unit/test_warm_pool.py pins): a dead CLI's sessions are
never handed out and are forgotten with their turns told, and a running turn's session is
found by its task. (Its use by the backend is covered end to end.)"""

from __future__ import annotations

from pathlib import Path

import pytest
from copilot import CopilotClient, RuntimeConnection

from wrappers.copilot.permissions import PermissionPolicy
from wrappers.copilot.runtime import Child
from wrappers.copilot.sessions import WarmSession, WarmSessions


@pytest.fixture
def child(copilot_cli: Path) -> Child:
    """A child record for bookkeeping only: the client is never started."""
    client = CopilotClient(connection=RuntimeConnection.for_stdio(path=str(copilot_cli)))
    return Child(client, generation=1)


def warm(pool: WarmSessions, child: Child, *names: str) -> list[WarmSession]:
    policy = PermissionPolicy(Path("/srv/a2a-project"))
    sessions = [WarmSession(name, child, policy) for name in names]
    for session in sessions:
        pool.add(session.session_id, session)
    return sessions


async def test_a_running_turns_session_is_found_by_its_task(child: Child) -> None:
    pool = WarmSessions(warm_idle_ms=1, max_warm=1)
    a, b = warm(pool, child, "a", "b")
    a.begin("task-1")
    b.begin("task-2")

    assert pool.for_task("task-2") is b
    b.end()
    assert pool.for_task("task-2") is None
    assert pool.for_task("task-1") is a
    a.end()


async def test_the_sessions_of_a_dead_cli_are_forgotten_and_their_turns_told(
    child: Child,
) -> None:
    pool = WarmSessions(warm_idle_ms=0, max_warm=8)
    (a,) = warm(pool, child, "a")
    turn = a.begin("task")
    assert pool.live("a") is a
    child.returncode = -9
    child.exited.set()

    assert pool.live("a") is None  # a dead child's session is never handed out
    for gone in pool.forget_child(child):
        gone.child_exited()

    assert len(pool) == 0
    assert turn.done.is_set()
    item = turn.receive.receive_nowait()
    assert getattr(item, "returncode", None) == -9
    a.end()
