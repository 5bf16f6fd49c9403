"""PostgreSQL workspace store: `workspaces` in the replicas' shared database (database.py).
Same contract as the SQLite store (sqlite/workspaces.py). A workspace's path is on the replica
that made it (or on storage the replicas share: docs/operations.md#replicas); its row is here so
every replica knows it exists."""

from __future__ import annotations

import asyncpg

from core.storage.contracts import WorkspaceRecord
from core.storage.postgres.database import PostgresStore

_COLUMNS = "principal, context_id, mode, path, branch, base, created_at, git_dir"


def _record(row: asyncpg.Record) -> WorkspaceRecord:
    return WorkspaceRecord(
        principal=row["principal"],
        context_id=row["context_id"],
        mode=row["mode"],
        path=row["path"],
        branch=row["branch"],
        base=row["base"],
        created_at=row["created_at"],
        git_dir=row["git_dir"],
    )


class PostgresWorkspaceStore(PostgresStore):
    async def get(self, principal: str, context_id: str) -> WorkspaceRecord | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM workspaces "  # noqa: S608 - constant column list
            "WHERE principal = $1 AND context_id = $2",
            principal,
            context_id,
        )
        return _record(row) if row else None

    async def put(self, record: WorkspaceRecord) -> None:
        await self._db.execute(
            f"INSERT INTO workspaces ({_COLUMNS}) "  # noqa: S608 - constant column list
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (principal, context_id) DO "
            "UPDATE SET mode = EXCLUDED.mode, path = EXCLUDED.path, branch = EXCLUDED.branch, "
            "base = EXCLUDED.base, created_at = EXCLUDED.created_at, git_dir = EXCLUDED.git_dir",
            record.principal,
            record.context_id,
            record.mode,
            record.path,
            record.branch,
            record.base,
            record.created_at,
            record.git_dir,
        )

    async def delete(self, principal: str, context_id: str) -> None:
        await self._db.execute(
            "DELETE FROM workspaces WHERE principal = $1 AND context_id = $2",
            principal,
            context_id,
        )

    async def all(self) -> list[WorkspaceRecord]:
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM workspaces ORDER BY created_at"  # noqa: S608 - constant column list
        )
        return [_record(r) for r in rows]
