"""One SQLite file used from async code: one connection, every call on a worker thread.

Calls are serialised through a capacity limiter of one, so the connection is never used by two
threads at once and the event loop never waits on disk. The task and session stores share the
file, each with a connection of its own (WAL lets readers and one writer proceed together).

A row that cannot be decoded (written by a faulty or another version, or edited by hand) is
never fatal: the stores skip it (or answer "not found" for it) and report it with
`unreadable()`, one log line per row and process, so nothing stored can stop a start or break
a listing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio
import anyio.to_thread
import structlog
from pydantic import ValidationError

log = structlog.get_logger(__name__)

# What decoding a row can raise: a ValidationError (a ValueError) from the models, a
# ValueError from timestamps, a TypeError for a column of the wrong type.
ROW_ERRORS = (ValueError, TypeError, KeyError)

T = TypeVar("T")


class SqliteDatabase:
    def __init__(self, path: Path, schema: str, name: str) -> None:
        self._path = path
        self._schema = schema
        self._name = name
        self._conn: sqlite3.Connection | None = None
        self._limiter = anyio.CapacityLimiter(1)
        self._reported: set[tuple[str, str]] = set()

    def unreadable(self, table: str, key: dict[str, object], exc: Exception) -> None:
        """Report a row that cannot be decoded: once per row, naming the table and the key,
        with what failed but not the row's content (it may hold a prompt)."""
        ident = (table, repr(sorted(key.items())))
        if ident in self._reported:
            return
        self._reported.add(ident)
        log.warning("store.unreadable_row", table=table, key=key, error=_why(exc))

    async def run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn` in one transaction on the worker thread."""
        conn = self._conn
        if conn is None:
            raise RuntimeError(f"{self._name} is not open")

        def call() -> T:
            with conn:
                return fn(conn)

        return await anyio.to_thread.run_sync(call, limiter=self._limiter)

    async def open(self) -> None:
        def connect() -> sqlite3.Connection:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self._path, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # Another store shares the file: wait for its writes rather than fail.
            conn.execute("PRAGMA busy_timeout=5000")
            conn.executescript(self._schema)
            conn.isolation_level = "DEFERRED"
            return conn

        self._conn = await anyio.to_thread.run_sync(connect, limiter=self._limiter)

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await anyio.to_thread.run_sync(conn.close, limiter=self._limiter)


def _why(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or '(row)'}: {e['type']}"
            for e in exc.errors(include_url=False)[:5]
        )
    return type(exc).__name__
