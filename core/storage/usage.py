"""Where turns' usage is kept: one row per turn (tokens, cost, when, whose), next to the tasks
and sessions. Budgets add the rows up at start; a row that cannot be decoded is skipped and
reported (`SqliteDatabase.unreadable`), never fatal."""

from __future__ import annotations

import sqlite3
from dataclasses import astuple, dataclass
from pathlib import Path
from typing import Protocol

from core.storage.queued import Queued, done
from core.storage.sqlite.database import ROW_ERRORS, SqliteDatabase


@dataclass(frozen=True)
class TurnUsage:
    """What one turn used. `input_tokens` counts the cache reads and creations too (they are
    its breakdown); `at` is the turn's end, in seconds since the epoch."""

    task_id: str
    principal: str
    context_id: str
    at: float
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class UsageStore(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def add(self, usage: TurnUsage) -> Queued[None]:
        """Keep one turn's usage (queued when called, see core/storage/queued.py)."""
        ...

    async def load(self) -> list[TurnUsage]:
        """Every readable row, oldest first."""
        ...


class InMemoryUsageStore:
    def __init__(self) -> None:
        self._rows: list[TurnUsage] = []

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def add(self, usage: TurnUsage) -> Queued[None]:
        self._rows.append(usage)
        return done()

    async def load(self) -> list[TurnUsage]:
        return sorted(self._rows, key=lambda row: row.at)


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
COLUMNS = (
    "task_id, principal, context_id, at, input_tokens, output_tokens, cache_read_tokens, "
    "cache_creation_tokens, cost_usd, model"
)

_INSERT = f"INSERT INTO turn_usage ({COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)"  # noqa: S608 - fixed columns


def decode_usage(row: tuple[object, ...]) -> TurnUsage:
    """A row, each column's type checked (SQLite keeps whatever it was given)."""
    task_id, principal, context_id, at, inp, out, read, made, cost, model = row
    if not all(isinstance(v, str) for v in (task_id, principal, context_id)):
        raise TypeError("a column has the wrong type")
    if not isinstance(at, float | int) or not isinstance(cost, float | int):
        raise TypeError("a number column has the wrong type")
    if model is not None and not isinstance(model, str):
        raise TypeError("model is not text")
    return TurnUsage(
        str(task_id),
        str(principal),
        str(context_id),
        float(at),
        _count(inp),
        _count(out),
        _count(read),
        _count(made),
        float(cost),
        model,
    )


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        raise TypeError("a token count is not a count")
    return value


class SqliteUsageStore:
    def __init__(self, path: Path, *, db: SqliteDatabase | None = None) -> None:
        """`db`: the daemon's shared database on `path` (else one of its own)."""
        if db is None:
            db = SqliteDatabase(path, name="usage store")
        db.add_schema(_SCHEMA)
        self._db = db

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    def add(self, usage: TurnUsage) -> Queued[None]:
        values = astuple(usage)

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(_INSERT, values)

        return self._db.run(insert)

    async def load(self) -> list[TurnUsage]:
        def select(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
            return conn.execute(f"SELECT rowid, {COLUMNS} FROM turn_usage ORDER BY at").fetchall()  # noqa: S608 - fixed column list

        rows: list[TurnUsage] = []
        for rowid, *row in await self._db.run(select):
            try:
                rows.append(decode_usage(tuple(row)))
            except ROW_ERRORS as exc:
                self._db.unreadable("turn_usage", {"rowid": rowid}, exc)
        return rows
