"""The `Storage` bundle on every engine: opened, it takes a write (the readiness probe's
storage check), and every store of it reads what another wrote through the one database."""

from __future__ import annotations

from datetime import UTC, datetime

from core.storage.contracts import SessionRecord, WorkspaceRecord
from core.storage.kinds import Storage
from core.wire.enums import TaskState
from core.wire.models import Task, TaskStatus

T0 = datetime(2026, 1, 1, tzinfo=UTC)


async def test_an_opened_storage_takes_a_write(storage: Storage) -> None:
    await storage.probe()


async def test_the_stores_of_one_bundle_work_side_by_side(storage: Storage) -> None:
    task = Task(id="t", context_id="c", status=TaskStatus(state=TaskState.WORKING, timestamp=T0))
    session = SessionRecord("p", "c", "claude", "s1", T0, T0)
    workspace = WorkspaceRecord("p", "c", "worktree", "/w/c", "a2a/c", "abc123", T0)

    # Queued together, as a turn's end writes them: one batch on SQLite.
    saved = storage.tasks.save("p", task)
    touched = storage.sessions.touch("p", "c", "s1", T0)
    await saved
    await touched
    await storage.sessions.put(session)
    await storage.workspaces.put(workspace)

    assert await storage.tasks.get("p", "t") == task
    assert await storage.sessions.get("p", "c") == session
    assert await storage.workspaces.get("p", "c") == workspace
    assert await storage.sessions.count() == 1
