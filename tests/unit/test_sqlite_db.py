"""`SqliteDatabase`: group commit on one connection, and another connection on the same file
never makes a call fail."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from structlog.testing import capture_logs

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


async def test_a_caller_cancelled_through_anyio_waits_until_its_call_ran(tmp_path: Path) -> None:
    """Like a thread call, a store call completes once started: the caller's cancellation is
    delivered after it."""
    db = SqliteDatabase(tmp_path / "db.sqlite3", SCHEMA)
    await db.open()
    started, go_on = threading.Event(), threading.Event()
    seen_on_return: list[object] = []

    def slow_insert(conn: sqlite3.Connection) -> None:
        started.set()
        go_on.wait(5)
        conn.execute("INSERT INTO t VALUES ('a', 1)")

    scope = anyio.CancelScope()

    async def insert() -> None:
        with scope:
            try:
                await db.run(slow_insert)
            finally:
                seen_on_return.append(go_on.is_set())

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(insert)
            assert await anyio.to_thread.run_sync(started.wait, 5)
            scope.cancel()
            await anyio.sleep(0.05)
            assert seen_on_return == []  # still waiting for its call
            go_on.set()
        assert seen_on_return == [True]
        assert await db.run(lambda c: c.execute("SELECT k FROM t").fetchall()) == [("a",)]
    finally:
        go_on.set()
        await db.close()


async def test_a_caller_cancelled_outside_anyio_stops_waiting_and_its_failure_is_logged(
    tmp_path: Path,
) -> None:
    """aiohttp cancels the handler of a request whose client went away as a plain asyncio
    task: the caller stops waiting, its call still runs in its place, and its failure, which
    nobody hears any more, is logged."""
    db = SqliteDatabase(tmp_path / "db.sqlite3", SCHEMA)
    await db.open()
    started, go_on = threading.Event(), threading.Event()

    def slow_failing(conn: sqlite3.Connection) -> None:
        started.set()
        go_on.wait(5)
        conn.execute("INSERT INTO t VALUES ('a', 1)")
        raise RuntimeError("refused")

    async def call() -> None:
        await db.run(slow_failing)

    try:
        with capture_logs() as logs:
            handler = asyncio.ensure_future(call())
            assert await anyio.to_thread.run_sync(started.wait, 5)
            handler.cancel()
            await asyncio.wait([handler])
            assert handler.cancelled()
            assert not go_on.is_set()  # it returned while its call was still running
            go_on.set()
            rows = await db.run(lambda c: c.execute("SELECT k FROM t").fetchall())
        assert rows == []  # the failed call undid its own insert
        unheard = [e for e in logs if e["event"] == "store.call_failed_unheard"]
        assert [e["error"] for e in unheard] == ["RuntimeError('refused')"]
    finally:
        go_on.set()
        await db.close()
