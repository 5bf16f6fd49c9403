"""`SqliteDatabase`: group commit on one connection, and another connection on the same file
never makes a call fail."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.storage.sqlite import database
from core.storage.sqlite.database import SqliteDatabase

SCHEMA = "CREATE TABLE IF NOT EXISTS t (k TEXT PRIMARY KEY, v INTEGER NOT NULL);"


async def test_a_call_that_reads_then_writes_survives_another_connections_write(
    tmp_path: Path,
) -> None:
    """Another connection tries to write while a call is between its read and its write: that
    writer waits (here: is refused at once, timeout 0) instead of making our call fail."""
    path = tmp_path / "db.sqlite3"
    db = SqliteDatabase(path, SCHEMA)
    await db.open()
    await db.run(lambda c: c.execute("INSERT INTO t VALUES ('a', 1)"))
    other = sqlite3.connect(path, timeout=0, isolation_level=None, check_same_thread=False)
    other_outcome: list[str] = []

    def read_then_write(conn: sqlite3.Connection) -> int:
        (value,) = conn.execute("SELECT v FROM t WHERE k = 'a'").fetchone()
        try:
            other.execute("INSERT INTO t VALUES ('b', 2)")
            other_outcome.append("wrote")
        except sqlite3.OperationalError as exc:
            other_outcome.append(str(exc))
        conn.execute("UPDATE t SET v = ? WHERE k = 'a'", (value + 1,))
        return int(value)

    try:
        assert await db.run(read_then_write) == 1
        assert other_outcome == ["database is locked"]
        rows = await db.run(lambda c: c.execute("SELECT k, v FROM t ORDER BY k").fetchall())
        assert rows == [("a", 2)]
    finally:
        other.close()
        await db.close()


@pytest.mark.parametrize("one_statement", [False, True])
async def test_calls_made_together_share_a_batch_and_fail_alone(
    tmp_path: Path, one_statement: bool
) -> None:
    """With a savepoint each, or (`one_statement`) none: a failed statement undoes its own
    rows (here the first of two it inserts) and the batch's other calls are committed."""
    db = SqliteDatabase(tmp_path / "db.sqlite3", SCHEMA)
    await db.open()
    results: dict[str, object] = {}

    async def put(key: str, value: int) -> None:
        # Two rows: the second collides when `key` is "dup", after the first was inserted.
        rows = (f"{key}-first", value, key, value)
        try:
            await db.run(
                lambda c: c.execute("INSERT INTO t VALUES (?, ?), (?, ?)", rows),
                one_statement=one_statement,
            )
            results[key] = "ok"
        except sqlite3.IntegrityError:
            results[key] = "refused"

    try:
        await db.run(lambda c: c.execute("INSERT INTO t VALUES ('dup', 0)"))
        async with anyio.create_task_group() as tg:
            for key, value in (("x", 1), ("dup", 2), ("y", 3)):
                tg.start_soon(put, key, value)
        assert results == {"x": "ok", "dup": "refused", "y": "ok"}
        rows = await db.run(lambda c: c.execute("SELECT k, v FROM t ORDER BY k").fetchall())
        assert rows == [("dup", 0), ("x", 1), ("x-first", 1), ("y", 3), ("y-first", 3)]
    finally:
        await db.close()


@pytest.mark.parametrize("statement", ["SELECT 1", "INSERT INTO t VALUES ('z', 9)"])
async def test_a_single_call_commits_or_rolls_back(tmp_path: Path, statement: str) -> None:
    db = SqliteDatabase(tmp_path / "db.sqlite3", SCHEMA)
    await db.open()

    def then_fail(conn: sqlite3.Connection) -> None:
        conn.execute(statement)
        raise RuntimeError("boom")

    try:
        with pytest.raises(RuntimeError, match="boom"):
            await db.run(then_fail)
        assert await db.run(lambda c: c.execute("SELECT count(*) FROM t").fetchone()[0]) == 0
    finally:
        await db.close()


async def test_a_batch_that_fails_outside_its_calls_fails_them_and_the_writer_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failure of the batch itself (a ROLLBACK that fails, say) reaches every caller of the
    batch, and the writer thread serves the next calls."""
    db = SqliteDatabase(tmp_path / "db.sqlite3", SCHEMA)
    await db.open()
    execute = database._execute

    def broken(conn: sqlite3.Connection, batch: list[Any]) -> None:
        monkeypatch.setattr(database, "_execute", execute)
        raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(database, "_execute", broken)
    outcomes: list[str] = []

    async def put(key: str) -> None:
        try:
            await db.run(lambda c: c.execute("INSERT INTO t VALUES (?, 1)", (key,)))
            outcomes.append("ok")
        except sqlite3.OperationalError as exc:
            outcomes.append(str(exc))

    try:
        async with anyio.create_task_group() as tg:
            for key in ("a", "b"):
                tg.start_soon(put, key)
        assert outcomes == ["disk I/O error", "disk I/O error"]
        await db.run(lambda c: c.execute("INSERT INTO t VALUES ('c', 1)"))
        rows = await db.run(lambda c: c.execute("SELECT k FROM t").fetchall())
        assert rows == [("c",)]
    finally:
        await db.close()
