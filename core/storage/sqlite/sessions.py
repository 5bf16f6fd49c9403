"""SQLite session store: `sessions` and `session_tombstones` in the daemon's database file,
one connection on a worker thread.

A mapping that cannot be read is treated as absent (the next turn of its context starts a fresh
session, whose mapping replaces the row) and left out of the sweep.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from core.storage.contracts import SessionRecord
from core.storage.queued import Queued
from core.storage.rows import ROW_ERRORS
from core.storage.sqlite.database import SqliteStore, time_of, time_text

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    principal TEXT NOT NULL,
    context_id TEXT NOT NULL,
    backend TEXT NOT NULL,
    session_id TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_used_at TEXT NOT NULL,
    turns INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (principal, context_id)
);
CREATE INDEX IF NOT EXISTS sessions_by_creation ON sessions (created_at);
CREATE TABLE IF NOT EXISTS session_tombstones (
    principal TEXT NOT NULL,
    context_id TEXT NOT NULL,
    expired_at TEXT NOT NULL,
    PRIMARY KEY (principal, context_id)
);
CREATE INDEX IF NOT EXISTS session_tombstones_by_expiry ON session_tombstones (expired_at);
"""
_COLUMNS = "principal, context_id, backend, session_id, created_at, last_used_at, turns"


def _record(row: tuple[object, ...]) -> SessionRecord:
    """Decode a row, checking each column's type (SQLite keeps whatever it was given)."""
    principal, context_id, backend, session_id, created, used, turns = row
    texts = (principal, context_id, backend, session_id, created, used)
    if not all(isinstance(v, str) for v in texts) or type(turns) is not int:
        raise TypeError("a column has the wrong type")
    return SessionRecord(
        principal=str(principal),
        context_id=str(context_id),
        backend=str(backend),
        session_id=str(session_id),
        created_at=time_of(str(created)),
        last_used_at=time_of(str(used)),
        turns=turns,
    )


class SqliteSessionStore(SqliteStore):
    SCHEMA = _SCHEMA
    NAME = "session store"

    def _decode(self, row: tuple[object, ...]) -> SessionRecord | None:
        try:
            return _record(row)
        except ROW_ERRORS as exc:
            key = {"principal": row[0], "context_id": row[1]}
            self._db.unreadable("sessions", key, exc)
            return None

    async def get(self, principal: str, context_id: str) -> SessionRecord | None:
        def read(conn: sqlite3.Connection) -> tuple[object, ...] | None:
            row: tuple[object, ...] | None = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE principal = ? AND context_id = ?",  # noqa: S608 - constant column list
                (principal, context_id),
            ).fetchone()
            return row

        row = await self._db.run(read)
        return self._decode(row) if row else None

    async def lookup(self, principal: str, context_id: str) -> tuple[SessionRecord | None, bool]:
        def read(conn: sqlite3.Connection) -> tuple[tuple[object, ...] | None, bool]:
            row: tuple[object, ...] | None = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE principal = ? AND context_id = ?",  # noqa: S608 - constant column list
                (principal, context_id),
            ).fetchone()
            if row is not None:
                return row, False
            cursor = conn.execute(
                "DELETE FROM session_tombstones WHERE principal = ? AND context_id = ?",
                (principal, context_id),
            )
            return None, cursor.rowcount > 0

        row, expired = await self._db.run(read)
        return (self._decode(row) if row else None), expired

    def touch(
        self, principal: str, context_id: str, session_id: str, used_at: datetime
    ) -> Queued[None]:
        params = (time_text(used_at), principal, context_id, session_id)

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE sessions SET last_used_at = ?, turns = turns + 1 "
                "WHERE principal = ? AND context_id = ? AND session_id = ?",
                params,
            )

        return self._db.run(write, one_statement=True)

    async def put(self, record: SessionRecord) -> None:
        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT OR REPLACE INTO sessions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",  # noqa: S608 - constant column list
                (
                    record.principal,
                    record.context_id,
                    record.backend,
                    record.session_id,
                    time_text(record.created_at),
                    time_text(record.last_used_at),
                    record.turns,
                ),
            )

        await self._db.run(write, one_statement=True)

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        def remove(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "DELETE FROM sessions WHERE principal = ? AND context_id = ? AND session_id = ?",
                (principal, context_id, session_id),
            )
            return cursor.rowcount > 0

        return await self._db.run(remove)

    async def expire_many(
        self, records: list[SessionRecord], expired_at: datetime
    ) -> list[SessionRecord]:
        stamp = time_text(expired_at)

        def remove(conn: sqlite3.Connection) -> list[SessionRecord]:
            # One transaction: a turn never sees the mapping gone without its tombstone.
            removed = []
            for record in records:
                cursor = conn.execute(
                    "DELETE FROM sessions "
                    "WHERE principal = ? AND context_id = ? AND session_id = ?",
                    (record.principal, record.context_id, record.session_id),
                )
                if cursor.rowcount > 0:
                    conn.execute(
                        "INSERT OR REPLACE INTO session_tombstones "
                        "(principal, context_id, expired_at) VALUES (?, ?, ?)",
                        (record.principal, record.context_id, stamp),
                    )
                    removed.append(record)
            return removed

        return await self._db.run(remove)

    async def take_tombstone(self, principal: str, context_id: str) -> bool:
        def take(conn: sqlite3.Connection) -> bool:
            cursor = conn.execute(
                "DELETE FROM session_tombstones WHERE principal = ? AND context_id = ?",
                (principal, context_id),
            )
            return cursor.rowcount > 0

        return await self._db.run(take)

    async def purge_tombstones(self, expired_before: datetime) -> int:
        def purge(conn: sqlite3.Connection) -> int:
            cursor = conn.execute(
                "DELETE FROM session_tombstones WHERE expired_at < ?", (time_text(expired_before),)
            )
            return cursor.rowcount

        return await self._db.run(purge)

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        def read(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
            rows: list[tuple[object, ...]] = conn.execute(
                f"SELECT {_COLUMNS} FROM sessions WHERE created_at < ?",  # noqa: S608 - constant column list
                (time_text(cutoff),),
            ).fetchall()
            return rows

        rows = await self._db.run(read)
        return [r for r in map(self._decode, rows) if r is not None]

    async def count(self) -> int:
        def read(conn: sqlite3.Connection) -> int:
            (n,) = conn.execute("SELECT COUNT(*) FROM sessions").fetchone()
            return int(n)

        return await self._db.run(read)
