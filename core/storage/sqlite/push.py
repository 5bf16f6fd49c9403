"""SQLite push store: `push_configs` and the `push_outbox` table in the tasks database file.

A config or outbox row that cannot be read is left out (a config is then not found, a delivery
not attempted) and reported once; it never stops a start.
"""

from __future__ import annotations

import sqlite3

from core.storage.contracts import Delivery, StoredConfig
from core.storage.rows import config_json, delivery_of, stored_config_of
from core.storage.sqlite.database import SqliteStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS push_configs (
    principal TEXT NOT NULL,
    task_id TEXT NOT NULL,
    id TEXT NOT NULL,
    version TEXT NOT NULL,
    body TEXT NOT NULL,
    created INTEGER NOT NULL,
    PRIMARY KEY (principal, task_id, id)
);
CREATE INDEX IF NOT EXISTS push_configs_by_task ON push_configs (task_id);
CREATE TABLE IF NOT EXISTS push_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    principal TEXT NOT NULL,
    version TEXT NOT NULL,
    config TEXT NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0
);
"""


class SqlitePushStore(SqliteStore):
    SCHEMA = _SCHEMA
    NAME = "push store"

    async def put_config(self, stored: StoredConfig) -> None:
        row = (stored.principal, stored.task_id, stored.id, stored.version)
        body = config_json(stored.config)

        def put(c: sqlite3.Connection) -> None:
            created = c.execute("SELECT COALESCE(MAX(created), 0) + 1 FROM push_configs")
            c.execute(
                "INSERT OR REPLACE INTO push_configs VALUES (?, ?, ?, ?, ?, ?)",
                (*row, body, created.fetchone()[0]),
            )

        await self._db.run(put)

    def _stored(
        self, principal: str, task_id: str, row: tuple[object, object, object]
    ) -> StoredConfig | None:
        return stored_config_of(self._db.unreadable, principal, task_id, row)

    async def get_config(self, principal: str, task_id: str, config_id: str) -> StoredConfig | None:
        found = await self._db.run(
            lambda c: c.execute(
                "SELECT id, version, body FROM push_configs "
                "WHERE principal = ? AND task_id = ? AND id = ?",
                (principal, task_id, config_id),
            ).fetchone()
        )
        return self._stored(principal, task_id, found) if found else None

    async def list_configs(self, principal: str, task_id: str) -> list[StoredConfig]:
        rows = await self._db.run(
            lambda c: c.execute(
                "SELECT id, version, body FROM push_configs WHERE principal = ? AND task_id = ? "
                "ORDER BY created",
                (principal, task_id),
            ).fetchall()
        )
        return [s for s in (self._stored(principal, task_id, r) for r in rows) if s is not None]

    async def delete_config(self, principal: str, task_id: str, config_id: str) -> None:
        await self._db.run(
            lambda c: c.execute(
                "DELETE FROM push_configs WHERE principal = ? AND task_id = ? AND id = ?",
                (principal, task_id, config_id),
            )
        )

    async def delete_task_configs(self, principal: str, task_id: str) -> None:
        await self._db.run(
            lambda c: c.execute(
                "DELETE FROM push_configs WHERE principal = ? AND task_id = ?",
                (principal, task_id),
            )
        )

    async def watched_tasks(self) -> set[str]:
        rows = await self._db.run(
            lambda c: c.execute("SELECT DISTINCT task_id FROM push_configs").fetchall()
        )
        return {r[0] for r in rows}

    async def add_deliveries(self, deliveries: list[Delivery]) -> list[Delivery]:
        def add(c: sqlite3.Connection) -> list[Delivery]:
            added = []
            for d in deliveries:
                cursor = c.execute(
                    "INSERT INTO push_outbox (principal, version, config, body) "
                    "VALUES (?, ?, ?, ?)",
                    (d.principal, d.version, config_json(d.config), d.body),
                )
                seq = cursor.lastrowid
                if seq is None:  # pragma: no cover - an INSERT always sets it
                    raise RuntimeError("no rowid for an outbox row")
                added.append(Delivery(seq, d.principal, d.version, d.config, d.body))
            return added

        return await self._db.run(add)

    async def pending(self) -> list[Delivery]:
        rows = await self._db.run(
            lambda c: c.execute(
                "SELECT seq, principal, version, config, body, attempts FROM push_outbox "
                "ORDER BY seq"
            ).fetchall()
        )
        return [d for d in (delivery_of(self._db.unreadable, row) for row in rows) if d]

    async def record_attempt(self, seq: int, attempts: int) -> None:
        await self._db.run(
            lambda c: c.execute(
                "UPDATE push_outbox SET attempts = ? WHERE seq = ?", (attempts, seq)
            )
        )

    async def remove_delivery(self, seq: int) -> None:
        await self._db.run(lambda c: c.execute("DELETE FROM push_outbox WHERE seq = ?", (seq,)))
