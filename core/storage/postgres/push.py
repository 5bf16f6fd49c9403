"""PostgreSQL push store: `push_configs` and `push_outbox` in the replicas' shared database.

Same contract as the SQLite store (sqlite/push.py). Each outbox row belongs to the replica
that added it (`replica`), which delivers it: `pending` returns this replica's rows and takes
over (one transaction, `FOR UPDATE SKIP LOCKED`) the rows of replicas whose lease has expired,
so each row is delivered by one replica, and a lost replica's deliveries are resumed by one
survivor.
"""

from __future__ import annotations

import asyncpg

from core.storage.contracts import Delivery, StoredConfig
from core.storage.postgres.database import Conn, PostgresStore
from core.storage.rows import config_json, delivery_of, stored_config_of


class PostgresPushStore(PostgresStore):
    async def put_config(self, stored: StoredConfig) -> None:
        # A replaced config moves to the end, as in the other stores.
        await self._db.execute(
            "INSERT INTO push_configs (principal, task_id, id, version, body) "
            "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (principal, task_id, id) DO UPDATE SET "
            "version = EXCLUDED.version, body = EXCLUDED.body, "
            "created = nextval('push_configs_created')",
            stored.principal,
            stored.task_id,
            stored.id,
            stored.version,
            config_json(stored.config),
        )

    def _stored(self, principal: str, task_id: str, row: asyncpg.Record) -> StoredConfig | None:
        return stored_config_of(
            self._db.unreadable, principal, task_id, (row["id"], row["version"], row["body"])
        )

    async def get_config(self, principal: str, task_id: str, config_id: str) -> StoredConfig | None:
        row = await self._db.fetchrow(
            "SELECT id, version, body FROM push_configs "
            "WHERE principal = $1 AND task_id = $2 AND id = $3",
            principal,
            task_id,
            config_id,
        )
        return self._stored(principal, task_id, row) if row else None

    async def list_configs(self, principal: str, task_id: str) -> list[StoredConfig]:
        rows = await self._db.fetch(
            "SELECT id, version, body FROM push_configs WHERE principal = $1 AND task_id = $2 "
            "ORDER BY created",
            principal,
            task_id,
        )
        return [s for s in (self._stored(principal, task_id, r) for r in rows) if s is not None]

    async def delete_config(self, principal: str, task_id: str, config_id: str) -> None:
        await self._db.execute(
            "DELETE FROM push_configs WHERE principal = $1 AND task_id = $2 AND id = $3",
            principal,
            task_id,
            config_id,
        )

    async def delete_task_configs(self, principal: str, task_id: str) -> None:
        await self._db.execute(
            "DELETE FROM push_configs WHERE principal = $1 AND task_id = $2", principal, task_id
        )

    async def watched_tasks(self) -> set[str]:
        rows = await self._db.fetch("SELECT DISTINCT task_id FROM push_configs")
        return {r["task_id"] for r in rows}

    async def add_deliveries(self, deliveries: list[Delivery]) -> list[Delivery]:
        async def add(conn: Conn) -> list[Delivery]:
            added = []
            for d in deliveries:
                seq = await conn.fetchval(
                    "INSERT INTO push_outbox (principal, version, config, body, replica) "
                    "VALUES ($1, $2, $3, $4, $5) RETURNING seq",
                    d.principal,
                    d.version,
                    config_json(d.config),
                    d.body,
                    self._db.replica_id,
                )
                added.append(Delivery(seq, d.principal, d.version, d.config, d.body))
            return added

        return await self._db.run(add)

    async def pending(self) -> list[Delivery]:
        """This replica's rows, and those of lost replicas (taken over), oldest first."""
        mine = await self._db.fetch(
            "SELECT seq, principal, version, config, body, attempts FROM push_outbox "
            "WHERE replica = $1 ORDER BY seq",
            self._db.replica_id,
        )
        return self._decode(mine) + await self.take_over()

    async def take_over(self) -> list[Delivery]:
        """The rows of lost replicas, now this one's (each row taken by one replica)."""
        rows = await self._db.fetch(
            "UPDATE push_outbox SET replica = $1 WHERE seq IN (SELECT seq FROM push_outbox "
            "WHERE replica <> $1 AND replica NOT IN "
            "(SELECT id FROM replicas WHERE expires_at > now()) FOR UPDATE SKIP LOCKED) "
            "RETURNING seq, principal, version, config, body, attempts",
            self._db.replica_id,
        )
        return sorted(self._decode(rows), key=lambda d: d.seq)

    def _decode(self, rows: list[asyncpg.Record]) -> list[Delivery]:
        found = (delivery_of(self._db.unreadable, tuple(row)) for row in rows)
        return [d for d in found if d is not None]

    async def record_attempt(self, seq: int, attempts: int) -> None:
        await self._db.execute("UPDATE push_outbox SET attempts = $1 WHERE seq = $2", attempts, seq)

    async def remove_delivery(self, seq: int) -> None:
        await self._db.execute("DELETE FROM push_outbox WHERE seq = $1", seq)
