"""SQLite push store: `push_configs` and the `push_outbox` table in the tasks database file."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import cast

from core.sqlite_db import SqliteDatabase
from core.tasks.push_store import Delivery, PushVersion, StoredConfig
from core.wire.models import TaskPushNotificationConfig

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


def _config_json(config: TaskPushNotificationConfig) -> str:
    return config.model_dump_json(by_alias=True, exclude_none=True)


def _stored(principal: str, version: str, body: str) -> StoredConfig:
    config = TaskPushNotificationConfig.model_validate_json(body)
    return StoredConfig(principal, cast(PushVersion, version), config)


class SqlitePushStore:
    def __init__(self, path: Path) -> None:
        self._db = SqliteDatabase(path, _SCHEMA, "push store")

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    async def put_config(self, stored: StoredConfig) -> None:
        row = (stored.principal, stored.task_id, stored.id, stored.version)
        body = _config_json(stored.config)

        def put(c: sqlite3.Connection) -> None:
            created = c.execute("SELECT COALESCE(MAX(created), 0) + 1 FROM push_configs")
            c.execute(
                "INSERT OR REPLACE INTO push_configs VALUES (?, ?, ?, ?, ?, ?)",
                (*row, body, created.fetchone()[0]),
            )

        await self._db.run(put)

    async def get_config(self, principal: str, task_id: str, config_id: str) -> StoredConfig | None:
        found = await self._db.run(
            lambda c: c.execute(
                "SELECT version, body FROM push_configs "
                "WHERE principal = ? AND task_id = ? AND id = ?",
                (principal, task_id, config_id),
            ).fetchone()
        )
        return _stored(principal, found[0], found[1]) if found else None

    async def list_configs(self, principal: str, task_id: str) -> list[StoredConfig]:
        rows = await self._db.run(
            lambda c: c.execute(
                "SELECT version, body FROM push_configs WHERE principal = ? AND task_id = ? "
                "ORDER BY created",
                (principal, task_id),
            ).fetchall()
        )
        return [_stored(principal, version, body) for version, body in rows]

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
                    (d.principal, d.version, _config_json(d.config), d.body),
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
        return [
            Delivery(
                seq,
                principal,
                cast(PushVersion, version),
                TaskPushNotificationConfig.model_validate_json(config),
                body,
                attempts,
            )
            for seq, principal, version, config, body, attempts in rows
        ]

    async def record_attempt(self, seq: int, attempts: int) -> None:
        await self._db.run(
            lambda c: c.execute(
                "UPDATE push_outbox SET attempts = ? WHERE seq = ?", (attempts, seq)
            )
        )

    async def remove_delivery(self, seq: int) -> None:
        await self._db.run(lambda c: c.execute("DELETE FROM push_outbox WHERE seq = ?", (seq,)))
