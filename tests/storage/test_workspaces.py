"""The WorkspaceStore contract on memory, SQLite and PostgreSQL: one record per (principal,
context), replaced by a put, scoped by principal, listed oldest first; SQLite and PostgreSQL
keep them across a reopen, and a SQLite file from before workspaces had a store of their own
opens with its rows."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from core.storage.contracts import WorkspaceRecord, WorkspaceStore
from core.storage.kinds import Storage, StorageConfig
from tests.storage.conftest import Engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def workspace(
    context: str, principal: str = "p", git_dir: str | None = None, created: datetime = T0
) -> WorkspaceRecord:
    return WorkspaceRecord(
        principal,
        context,
        "worktree",
        f"/w/{context}",
        f"a2a/{context}",
        "abc123",
        created,
        git_dir,
    )


@pytest.fixture
def store(storage: Storage) -> WorkspaceStore:
    return storage.workspaces


async def test_workspaces_round_trip_and_are_scoped_by_principal(store: WorkspaceStore) -> None:
    mine, copy = workspace("c"), workspace("d", git_dir="/w/d.git")
    await store.put(mine)
    await store.put(copy)
    await store.put(workspace("c", principal="q"))

    assert await store.get("p", "c") == mine
    assert await store.get("p", "d") == copy
    assert len(await store.all()) == 3
    await store.delete("p", "c")
    assert await store.get("p", "c") is None
    assert await store.get("q", "c") == workspace("c", principal="q")


async def test_an_unknown_context_has_no_workspace(store: WorkspaceStore) -> None:
    assert await store.get("p", "nothing") is None
    assert await store.all() == []


async def test_put_replaces_the_workspace_of_a_key(store: WorkspaceStore) -> None:
    await store.put(workspace("c"))
    moved = WorkspaceRecord("p", "c", "copy", "/w/c2", "a2a/c2", "def456", T0, "/w/c2.git")

    await store.put(moved)

    assert await store.get("p", "c") == moved
    assert await store.all() == [moved]


async def test_another_principal_neither_reads_nor_deletes_it(store: WorkspaceStore) -> None:
    await store.put(workspace("c", principal="alice"))

    assert await store.get("bob", "c") is None
    await store.delete("bob", "c")

    assert await store.get("alice", "c") == workspace("c", principal="alice")


async def test_deleting_a_missing_workspace_is_a_no_op(store: WorkspaceStore) -> None:
    await store.put(workspace("kept"))

    await store.delete("p", "never-made")

    assert await store.all() == [workspace("kept")]


async def test_all_lists_every_principals_workspaces_oldest_first(store: WorkspaceStore) -> None:
    later = workspace("b", principal="q", created=T0 + timedelta(minutes=2))
    earliest = workspace("c", created=T0 - timedelta(microseconds=1))
    middle = workspace("a", created=T0 + timedelta(seconds=1))
    for record in (later, earliest, middle):
        await store.put(record)

    assert await store.all() == [earliest, middle, later]


async def test_workspaces_survive_a_reopen(durable_engine: Engine) -> None:
    kept, gone = workspace("c", git_dir="/w/c.git"), workspace("d", principal="q")
    async with durable_engine.opened() as first:
        await first.workspaces.put(kept)
        await first.workspaces.put(gone)
        await first.workspaces.delete("q", "d")

    async with durable_engine.opened() as second:
        assert await second.workspaces.get("p", "c") == kept
        assert await second.workspaces.all() == [kept]


def sqlite_engine(path: Path) -> Engine:
    return Engine(StorageConfig("sqlite", path, "", timedelta(seconds=15)))


async def test_a_state_file_from_before_workspaces_opens_and_keeps_its_sessions(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as conn:  # the sessions table as it was before workspaces
        conn.execute(
            "CREATE TABLE sessions (principal TEXT NOT NULL, context_id TEXT NOT NULL, "
            "backend TEXT NOT NULL, session_id TEXT NOT NULL, created_at TEXT NOT NULL, "
            "last_used_at TEXT NOT NULL, turns INTEGER NOT NULL DEFAULT 0, "
            "PRIMARY KEY (principal, context_id))"
        )
        conn.execute(
            "INSERT INTO sessions VALUES "
            "('p', 'c', 'claude', 's1', '2026-01-01T00:00:00.000000Z', "
            "'2026-01-01T00:00:00.000000Z', 2)"
        )
    engine = sqlite_engine(path)
    engine.bundle().check_ours()
    async with engine.opened() as storage:
        kept = await storage.sessions.get("p", "c")
        await storage.workspaces.put(workspace("c"))
        found = await storage.workspaces.all()

    assert kept is not None and kept.session_id == "s1"
    assert found == [workspace("c")]


async def test_rows_the_session_store_wrote_before_the_split_are_read(tmp_path: Path) -> None:
    """The table is where (and as) the session store kept it: a file written then opens, is
    this daemon's, and keeps its workspaces."""
    path = tmp_path / "before-split.sqlite3"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE workspaces (principal TEXT NOT NULL, context_id TEXT NOT NULL, "
            "mode TEXT NOT NULL, path TEXT NOT NULL, branch TEXT NOT NULL, base TEXT NOT NULL, "
            "created_at TEXT NOT NULL, git_dir TEXT, PRIMARY KEY (principal, context_id))"
        )
        conn.execute(
            "INSERT INTO workspaces VALUES ('p', 'c', 'worktree', '/w/c', 'a2a/c', 'abc123', "
            "'2026-01-01T00:00:00.000000Z', NULL)"
        )
    engine = sqlite_engine(path)
    engine.bundle().check_ours()

    async with engine.opened() as storage:
        assert await storage.workspaces.get("p", "c") == workspace("c")


async def test_a_sqlite_row_that_cannot_be_read_is_left_out(tmp_path: Path) -> None:
    path = tmp_path / "damaged.sqlite3"
    engine = sqlite_engine(path)
    async with engine.opened() as storage:
        await storage.workspaces.put(workspace("good"))
    with sqlite3.connect(path) as conn:  # a timestamp without a time zone: not ours
        conn.execute(
            "INSERT INTO workspaces VALUES ('p', 'bad', 'worktree', '/w/bad', 'a2a/bad', "
            "'abc123', '2026-01-01T00:00:00', NULL)"
        )

    async with engine.opened() as storage:
        assert await storage.workspaces.get("p", "bad") is None
        assert await storage.workspaces.all() == [workspace("good")]
