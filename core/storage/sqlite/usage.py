"""SQLite usage store: `turn_usage` in the daemon's database file, one row per turn. A row
that cannot be decoded is skipped and reported (`SqliteDatabase.unreadable`), never fatal."""

from __future__ import annotations

import sqlite3
from dataclasses import astuple

from core.storage.contracts import TurnUsage
from core.storage.queued import Queued
from core.storage.rows import ROW_ERRORS, USAGE_COLUMNS, decode_usage
from core.storage.sqlite.database import SqliteStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS turn_usage (
    task_id TEXT NOT NULL,
    principal TEXT NOT NULL,
    context_id TEXT NOT NULL,
    at REAL NOT NULL,
    input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    cache_read_tokens INTEGER NOT NULL,
    cache_creation_tokens INTEGER NOT NULL,
    cost_usd REAL NOT NULL,
    model TEXT
);
CREATE INDEX IF NOT EXISTS turn_usage_by_time ON turn_usage (at);
"""

_INSERT = f"INSERT INTO turn_usage ({USAGE_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"  # noqa: S608 - fixed columns


class SqliteUsageStore(SqliteStore):
    SCHEMA = _SCHEMA
    NAME = "usage store"

    def add(self, usage: TurnUsage) -> Queued[None]:
        values = astuple(usage)

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(_INSERT, values)

        return self._db.run(insert)

    async def load(self) -> list[TurnUsage]:
        def select(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
            query = f"SELECT rowid, {USAGE_COLUMNS} FROM turn_usage ORDER BY at"  # noqa: S608 - fixed columns
            return conn.execute(query).fetchall()

        rows: list[TurnUsage] = []
        for rowid, *row in await self._db.run(select):
            try:
                rows.append(decode_usage(tuple(row)))
            except ROW_ERRORS as exc:
                self._db.unreadable("turn_usage", {"rowid": rowid}, exc)
        return rows
