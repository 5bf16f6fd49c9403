"""One SQLite file used from async code: one connection, every call on a worker thread.

One writer thread owns the connection (so it is never used by two threads at once) and the
event loop never waits on disk. The calls made in one pass of the event loop are handed to the
writer together; calls handed over while it is busy run together, in order, in its next
transaction (group commit: one hand-over, one commit and one wake-up of the event loop for all
of them), each in a savepoint of its own (a call of one SQL statement needs none: SQLite undoes
a failed statement itself), so one call's failure undoes only that call. A dedicated thread
costs less per batch than a thread call through anyio's pool (no limiter, no task, no
cancel scope per hop). The daemon's stores (tasks, sessions, workspaces, push, usage)
share one `SqliteDatabase` (one connection), so a turn's final task write and its session
bookkeeping, made together, share a transaction.

A row that cannot be decoded (written by a faulty or another version, or edited by hand) is
never fatal: the stores skip it (or answer "not found" for it) and report it with
`unreadable()`, one log line per row and process, so nothing stored can stop a start or break
a listing.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import anyio
import anyio.to_thread
import structlog
from pydantic import ValidationError

from core.storage.queued import Queued

log = structlog.get_logger(__name__)

T = TypeVar("T")

# The first 16 bytes of every SQLite 3 database file.
SQLITE_HEADER = b"SQLite format 3\x00"


class ForeignStorageError(Exception):
    """The storage file exists but is not this daemon's: not SQLite, damaged, or another
    program's database. `str()` is one line for the operator."""


class UnreadableRows:
    """What a database reports of the rows it cannot decode (the SQLite and the PostgreSQL
    one alike)."""

    def __init__(self) -> None:
        self._reported: set[tuple[str, str]] = set()

    def report(self, table: str, key: dict[str, object], exc: Exception) -> None:
        """Once per row, naming the table and the key, with what failed but not the row's
        content (it may hold a prompt)."""
        ident = (table, repr(sorted(key.items())))
        if ident in self._reported:
            return
        self._reported.add(ident)
        log.warning("store.unreadable_row", table=table, key=key, error=_why(exc))


@dataclass(eq=False)
class _Call:
    fn: Callable[[sqlite3.Connection], Any]
    # One SQL statement: SQLite undoes a failed statement by itself, so it needs no savepoint.
    one_statement: bool
    # Its outcome once the writer ran it (a plain asyncio future: the cheapest thing to await).
    done: asyncio.Future[Any]
    value: Any = None
    error: BaseException | None = None


# What the writer thread is handed: a batch and the event loop to wake when it is done (None:
# close the connection and stop).
_Batch = tuple[list[_Call], asyncio.AbstractEventLoop]


class SqliteDatabase:
    def __init__(self, path: Path, schema: str = "", name: str = "database") -> None:
        self._path = path
        self._schemas = [schema] if schema else []
        self._name = name
        self._conn: sqlite3.Connection | None = None
        self._users = 0
        self._rows = UnreadableRows()
        self._queue: list[_Call] = []
        self._inbox: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None

    @property
    def path(self) -> Path:
        return self._path

    def add_schema(self, schema: str) -> None:
        """Another store's tables (before the first `open`)."""
        if self._conn is not None:
            raise RuntimeError(f"{self._name} is open already")
        self._schemas.append(schema)

    def unreadable(self, table: str, key: dict[str, object], exc: Exception) -> None:
        self._rows.report(table, key, exc)

    def check_ours(self) -> None:
        """Raise ForeignStorageError unless the file is absent, empty, or an SQLite database
        holding only tables of the schemas added here, each with exactly its columns. Only
        reads: nothing is written to a file that is not ours."""
        check_ours(self._path, "\n".join(self._schemas))

    def run(
        self, fn: Callable[[sqlite3.Connection], T], *, one_statement: bool = False
    ) -> Queued[T]:
        """Queue `fn` now and return what to await for its result (core/storage/queued.py): it runs
        on the writer thread, in a transaction shared with the calls queued at the same time
        (each in its own savepoint, unless `one_statement`: `fn` executes a single SQL
        statement, or raises without having written). Like a thread call, it completes once
        started: an anyio cancellation is delivered after it (`_outcome`)."""
        if self._conn is None:
            raise RuntimeError(f"{self._name} is not open")
        loop = asyncio.get_running_loop()
        call = _Call(fn, one_statement, loop.create_future())
        if not self._queue:
            # Handed over after this pass of the loop: calls made in the same pass join it.
            loop.call_soon(self._hand_over)
        self._queue.append(call)
        return _outcome(call.done)

    def _hand_over(self) -> None:
        if not self._queue:
            return  # handed over already, by `close`
        batch, self._queue = self._queue, []
        self._inbox.put((batch, asyncio.get_running_loop()))

    def _write(self, conn: sqlite3.Connection) -> None:
        """The writer thread: run what is handed over, each time everything handed over so
        far in one transaction, until the connection closes."""
        inbox = self._inbox
        while True:
            item = inbox.get()
            batches = [item]
            while item is not None and not inbox.empty():
                item = inbox.get()
                batches.append(item)
            work = [b for b in batches if b is not None]
            if work:
                batch = [call for calls, _ in work for call in calls]
                try:
                    _execute(conn, batch)
                except BaseException as exc:  # noqa: BLE001 - a failed ROLLBACK: every caller hears of it
                    for call in batch:
                        call.error = call.error or exc
                for calls, loop in work:
                    # A closed loop (RuntimeError) has nobody waiting any more.
                    with contextlib.suppress(RuntimeError):
                        loop.call_soon_threadsafe(_finish, calls)
            if item is None:
                conn.close()
                return

    async def open(self) -> None:
        """Open the connection (the first of its users) and create every store's tables."""
        self._users += 1
        if self._conn is not None:
            return
        schemas = "\n".join(self._schemas)

        def connect() -> sqlite3.Connection:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Another process's connection may write the file: wait for it rather than fail.
            conn.execute("PRAGMA busy_timeout=5000")
            conn.executescript(schemas)
            return conn

        try:
            conn = await anyio.to_thread.run_sync(connect)
        except BaseException:
            self._users -= 1
            raise
        self._writer = threading.Thread(
            target=self._write, args=(conn,), name=f"sqlite {self._name}", daemon=True
        )
        self._writer.start()
        self._conn = conn

    async def close(self) -> None:
        """Close the connection once its last user closes (after the calls queued so far)."""
        self._users = max(0, self._users - 1)
        if self._users:
            return
        conn, self._conn = self._conn, None
        writer, self._writer = self._writer, None
        if conn is None or writer is None:
            return
        if self._queue:
            self._hand_over()
        self._inbox.put(None)
        await anyio.to_thread.run_sync(writer.join)


async def _outcome(done: asyncio.Future[T]) -> T:
    """The call's outcome once the writer ran it, waited for under a shield (like a thread
    call, it completes once started: a cancellation is delivered after it). An outcome that is
    there already needs no shield: there is no wait to interrupt."""
    if not done.done():
        with anyio.CancelScope(shield=True):
            await done
    return done.result()


def _finish(calls: list[_Call]) -> None:
    for call in calls:
        done = call.done
        if done.cancelled():
            # Cancelled when its task was cancelled from outside anyio (aiohttp does so to the
            # handler of a request whose client went away): nobody waits for it any more, and
            # only the log hears of its failure.
            if call.error is not None:
                log.warning("store.call_failed_unheard", error=repr(call.error))
        elif call.error is not None:
            done.set_exception(call.error)
        else:
            done.set_result(call.value)


def check_ours(path: Path, schema: str) -> None:
    """See `SqliteDatabase.check_ours`."""
    try:
        with path.open("rb") as file:
            header = file.read(len(SQLITE_HEADER))
    except (FileNotFoundError, NotADirectoryError):
        # Nothing there to be foreign; the lock file's creation says what is wrong with a
        # path that cannot exist.
        return
    except OSError as exc:
        raise ForeignStorageError(f"cannot read it: {exc.strerror}") from exc
    if not header:
        return
    if header != SQLITE_HEADER:
        raise ForeignStorageError(
            "it is not an SQLite database (not a2a-wrapper's storage); "
            "give storage.path a file of its own"
        )
    expected = _tables(sqlite3.connect(":memory:"), schema)
    try:
        # Read-write but reading only: a read-only connection cannot open a WAL file that a
        # killed daemon left (its -shm), which is ours.
        found = _tables(sqlite3.connect(path), "")
    except sqlite3.DatabaseError as exc:
        raise ForeignStorageError(
            f"it is damaged or not an SQLite database ({exc}); "
            "move it aside or give storage.path a file of its own"
        ) from exc
    foreign = sorted(
        name for name, columns in found.items() if expected.get(name, columns) != columns
    )
    foreign += sorted(set(found) - set(expected))
    if foreign:
        raise ForeignStorageError(
            f"it is another program's database (tables {', '.join(foreign)} are not "
            "a2a-wrapper's); give storage.path a file of its own"
        )


def _tables(conn: sqlite3.Connection, schema: str) -> dict[str, list[str]]:
    """Each table's column names (SQLite's own tables aside), after running `schema`."""
    try:
        if schema:
            conn.executescript(schema)
        names = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' "
                "AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"
            )
        ]
        return {
            name: [row[1] for row in conn.execute("SELECT * FROM pragma_table_info(?)", (name,))]
            for name in names
        }
    finally:
        conn.close()


def _execute(conn: sqlite3.Connection, batch: list[_Call]) -> None:
    """One transaction for the batch; each call in a savepoint (its failure undoes it alone).
    A failed commit fails every call of the batch.

    IMMEDIATE: the batch takes the write lock first (waiting up to busy_timeout for another
    connection's). A deferred transaction that read and then writes after another connection
    wrote fails at once with "database is locked" (a stale WAL snapshot; SQLite does not wait
    there), which would fail a turn whenever another connection writes the same file (the
    instance records, a second store, a tool)."""
    if len(batch) == 1:
        call = batch[0]
        try:
            conn.execute("BEGIN IMMEDIATE")
            call.value = call.fn(conn)
            conn.execute("COMMIT")
        except BaseException as exc:  # noqa: BLE001 - handed to the caller, who re-raises it
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            call.error = exc
        return
    try:
        conn.execute("BEGIN IMMEDIATE")
        for call in batch:
            if call.one_statement:
                # A failed statement undoes its own changes and the transaction goes on; a
                # failure that ended the transaction (SQLITE_FULL, say) fails the batch.
                try:
                    call.value = call.fn(conn)
                except BaseException as exc:  # handed to the caller, who re-raises it
                    call.error = exc
                    if not conn.in_transaction:
                        raise
                continue
            conn.execute("SAVEPOINT call")
            try:
                call.value = call.fn(conn)
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who re-raises it
                conn.execute("ROLLBACK TO call")
                call.error = exc
            conn.execute("RELEASE call")
        conn.execute("COMMIT")
    except BaseException as exc:  # noqa: BLE001 - handed to every caller of the batch
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        for call in batch:
            call.error = call.error or exc


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(row)'}: {e['type']}"
            for e in exc.errors(include_url=False)[:5]
        )
    return type(exc).__name__


def time_text(moment: datetime) -> str:
    """Fixed-width UTC text, so SQL compares instants as strings correctly."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def time_of(text: str) -> datetime:
    """The instant `time_text` wrote; ValueError for text without a time zone."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError("a timestamp without a time zone")
    return moment


class SqliteStore:
    """What every SQLite store is: a user of one `SqliteDatabase` (the daemon's shared one,
    or one of its own on `path`), adding its tables (`SCHEMA`) to it."""

    SCHEMA = ""
    NAME = "store"

    def __init__(self, path: Path, *, db: SqliteDatabase | None = None) -> None:
        if db is None:
            db = SqliteDatabase(path, name=self.NAME)
        db.add_schema(self.SCHEMA)
        self._db = db

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()
