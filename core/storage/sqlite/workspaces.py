"""SQLite workspace store: `workspaces` in the daemon's database file, one row per context
that has a workspace of its own (core/workspaces). A row that cannot be read is left out (its
context then gets a new workspace) and reported once.
"""

from __future__ import annotations

import sqlite3

from core.storage.contracts import WorkspaceRecord
from core.storage.rows import ROW_ERRORS
from core.storage.sqlite.database import SqliteStore, time_of, time_text

# The table is the one the session store made before workspaces had a store of their own
# (same name, same columns): an existing file opens as it is.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS workspaces (
    principal TEXT NOT NULL,
    context_id TEXT NOT NULL,
    mode TEXT NOT NULL,
    path TEXT NOT NULL,
    branch TEXT NOT NULL,
    base TEXT NOT NULL,
    created_at TEXT NOT NULL,
    git_dir TEXT,
    PRIMARY KEY (principal, context_id)
);
"""

_COLUMNS = "principal, context_id, mode, path, branch, base, created_at, git_dir"


def _record(row: tuple[object, ...]) -> WorkspaceRecord:
    principal, context_id, mode, path, branch, base, created, git_dir = row
    texts = (principal, context_id, mode, path, branch, base, created)
    if not all(isinstance(v, str) for v in texts) or not isinstance(git_dir, str | None):
        raise TypeError("a column has the wrong type")
    return WorkspaceRecord(
        principal=str(principal),
        context_id=str(context_id),
        mode=str(mode),
        path=str(path),
        branch=str(branch),
        base=str(base),
        created_at=time_of(str(created)),
        git_dir=git_dir,
    )


class SqliteWorkspaceStore(SqliteStore):
    SCHEMA = _SCHEMA
    NAME = "workspace store"

    def _decode(self, row: tuple[object, ...]) -> WorkspaceRecord | None:
        try:
            return _record(row)
        except ROW_ERRORS as exc:
            self._db.unreadable("workspaces", {"principal": row[0], "context_id": row[1]}, exc)
            return None

    async def get(self, principal: str, context_id: str) -> WorkspaceRecord | None:
        def read(conn: sqlite3.Connection) -> tuple[object, ...] | None:
            row: tuple[object, ...] | None = conn.execute(
                f"SELECT {_COLUMNS} FROM workspaces "  # noqa: S608 - constant column list
                "WHERE principal = ? AND context_id = ?",
                (principal, context_id),
            ).fetchone()
            return row

        row = await self._db.run(read)
        return self._decode(row) if row else None

    async def put(self, record: WorkspaceRecord) -> None:
        values = (
            record.principal,
            record.context_id,
            record.mode,
            record.path,
            record.branch,
            record.base,
            time_text(record.created_at),
            record.git_dir,
        )

        def write(conn: sqlite3.Connection) -> None:
            conn.execute(
                f"INSERT OR REPLACE INTO workspaces ({_COLUMNS}) "  # noqa: S608 - constant column list
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )

        await self._db.run(write)

    async def delete(self, principal: str, context_id: str) -> None:
        def remove(conn: sqlite3.Connection) -> None:
            conn.execute(
                "DELETE FROM workspaces WHERE principal = ? AND context_id = ?",
                (principal, context_id),
            )

        await self._db.run(remove)

    async def all(self) -> list[WorkspaceRecord]:
        def read(conn: sqlite3.Connection) -> list[tuple[object, ...]]:
            rows: list[tuple[object, ...]] = conn.execute(
                f"SELECT {_COLUMNS} FROM workspaces ORDER BY created_at"  # noqa: S608 - constant column list
            ).fetchall()
            return rows

        rows = await self._db.run(read)
        return [r for r in map(self._decode, rows) if r is not None]
