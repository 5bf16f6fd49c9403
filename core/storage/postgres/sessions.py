"""PostgreSQL session store: `sessions` and `session_tombstones` in the replicas' shared
database (database.py), so a context's session is the same whichever
replica a turn lands on. Same contract as the SQLite store (storage/sqlite/sessions.py)."""

from __future__ import annotations

from datetime import datetime

import asyncpg

from core.storage.contracts import SessionRecord
from core.storage.postgres.database import Conn, PostgresStore, count_of
from core.storage.queued import Queued

_COLUMNS = "principal, context_id, backend, session_id, created_at, last_used_at, turns"


def _record(row: asyncpg.Record) -> SessionRecord:
    return SessionRecord(
        principal=row["principal"],
        context_id=row["context_id"],
        backend=row["backend"],
        session_id=row["session_id"],
        created_at=row["created_at"],
        last_used_at=row["last_used_at"],
        turns=row["turns"],
    )


class PostgresSessionStore(PostgresStore):
    async def get(self, principal: str, context_id: str) -> SessionRecord | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM sessions WHERE principal = $1 AND context_id = $2",  # noqa: S608 - constant column list
            principal,
            context_id,
        )
        return _record(row) if row else None

    async def lookup(self, principal: str, context_id: str) -> tuple[SessionRecord | None, bool]:
        async def read(conn: Conn) -> tuple[SessionRecord | None, bool]:
            row = await conn.fetchrow(
                f"SELECT {_COLUMNS} FROM sessions WHERE principal = $1 AND context_id = $2",  # noqa: S608 - constant column list
                principal,
                context_id,
            )
            if row is not None:
                return _record(row), False
            return None, await _take_tombstone(conn, principal, context_id)

        return await self._db.run(read)

    async def put(self, record: SessionRecord) -> None:
        await self._db.execute(
            f"INSERT INTO sessions ({_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) "  # noqa: S608 - constant column list
            "ON CONFLICT (principal, context_id) DO UPDATE SET backend = EXCLUDED.backend, "
            "session_id = EXCLUDED.session_id, created_at = EXCLUDED.created_at, "
            "last_used_at = EXCLUDED.last_used_at, turns = EXCLUDED.turns",
            record.principal,
            record.context_id,
            record.backend,
            record.session_id,
            record.created_at,
            record.last_used_at,
            record.turns,
        )

    def touch(
        self, principal: str, context_id: str, session_id: str, used_at: datetime
    ) -> Queued[None]:
        return self._touch(principal, context_id, session_id, used_at)

    async def _touch(
        self, principal: str, context_id: str, session_id: str, used_at: datetime
    ) -> None:
        await self._db.execute(
            "UPDATE sessions SET last_used_at = $1, turns = turns + 1 "
            "WHERE principal = $2 AND context_id = $3 AND session_id = $4",
            used_at,
            principal,
            context_id,
            session_id,
        )

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        status = await self._db.execute(
            "DELETE FROM sessions WHERE principal = $1 AND context_id = $2 AND session_id = $3",
            principal,
            context_id,
            session_id,
        )
        return count_of(status) > 0

    async def expire_many(
        self, records: list[SessionRecord], expired_at: datetime
    ) -> list[SessionRecord]:
        async def remove(conn: Conn) -> list[SessionRecord]:
            # One transaction: a turn never sees the mapping gone without its tombstone. A
            # record another replica's sweep removed first is not removed twice.
            removed = []
            for record in records:
                status = await conn.execute(
                    "DELETE FROM sessions "
                    "WHERE principal = $1 AND context_id = $2 AND session_id = $3",
                    record.principal,
                    record.context_id,
                    record.session_id,
                )
                if count_of(status) > 0:
                    await conn.execute(
                        "INSERT INTO session_tombstones (principal, context_id, expired_at) "
                        "VALUES ($1, $2, $3) ON CONFLICT (principal, context_id) "
                        "DO UPDATE SET expired_at = EXCLUDED.expired_at",
                        record.principal,
                        record.context_id,
                        expired_at,
                    )
                    removed.append(record)
            return removed

        return await self._db.run(remove)

    async def take_tombstone(self, principal: str, context_id: str) -> bool:
        return await self._db.run(lambda conn: _take_tombstone(conn, principal, context_id))

    async def purge_tombstones(self, expired_before: datetime) -> int:
        status = await self._db.execute(
            "DELETE FROM session_tombstones WHERE expired_at < $1", expired_before
        )
        return count_of(status)

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        """The sweep's candidates on the leading replica (`PostgresDatabase.leads`); none on
        the others, so the TTL sweep runs on one replica at a time."""
        if not await self._db.leads():
            return []
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM sessions WHERE created_at < $1",  # noqa: S608 - constant column list
            cutoff,
        )
        return [_record(r) for r in rows]

    async def count(self) -> int:
        return int(await self._db.fetchval("SELECT COUNT(*) FROM sessions"))


async def _take_tombstone(conn: Conn, principal: str, context_id: str) -> bool:
    status = await conn.execute(
        "DELETE FROM session_tombstones WHERE principal = $1 AND context_id = $2",
        principal,
        context_id,
    )
    return count_of(status) > 0
