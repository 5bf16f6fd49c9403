"""SQLite push store: `push_configs` and the `push_outbox` table in the tasks database file.

A config or outbox row that cannot be read is left out (a config is then not found, a delivery
not attempted) and reported once; it never stops a start.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import cast, get_args

from core.storage.push import Delivery, PushVersion, StoredConfig
from core.storage.sqlite.database import ROW_ERRORS, SqliteDatabase
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


def _version(value: object) -> PushVersion:
    if value not in get_args(PushVersion):
        raise ValueError("unknown protocol version")
    return cast(PushVersion, value)


def _config(body: object) -> TaskPushNotificationConfig:
    if not isinstance(body, str | bytes):
        raise TypeError(f"config is {type(body).__name__}")
    return TaskPushNotificationConfig.model_validate_json(body)


def _delivery(row: tuple[object, ...]) -> Delivery:
    seq, principal, version, config, body, attempts = row
    if type(seq) is not int or type(attempts) is not int or not isinstance(principal, str):
        raise TypeError("a column has the wrong type")
    if not isinstance(body, str):
        raise TypeError(f"body is {type(body).__name__}")
    json.loads(body)  # the webhook gets it as it is: it must be JSON
    return Delivery(seq, principal, _version(version), _config(config), body, attempts)


Report = Callable[[str, dict[str, object], Exception], None]


def stored_config_of(
    report: Report, principal: str, task_id: str, row: tuple[object, object, object]
) -> StoredConfig | None:
    """A `push_configs` row (id, version, body), or None (reported) when it cannot be read."""
    config_id, version, body = row
    try:
        return StoredConfig(principal, _version(version), _config(body))
    except ROW_ERRORS as exc:
        report("push_configs", {"principal": principal, "task_id": task_id, "id": config_id}, exc)
        return None


def delivery_of(report: Report, row: tuple[object, ...]) -> Delivery | None:
    """A `push_outbox` row, or None (reported) when it cannot be read."""
    try:
        return _delivery(row)
    except ROW_ERRORS as exc:
        report("push_outbox", {"seq": row[0]}, exc)
        return None


class SqlitePushStore:
    def __init__(self, path: Path, *, db: SqliteDatabase | None = None) -> None:
        """`db`: the daemon's shared database on `path` (else one of its own)."""
        if db is None:
            db = SqliteDatabase(path, name="push store")
        db.add_schema(_SCHEMA)
        self._db = db

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
        return [d for d in (delivery_of(self._db.unreadable, row) for row in rows) if d]

    async def record_attempt(self, seq: int, attempts: int) -> None:
        await self._db.run(
            lambda c: c.execute(
                "UPDATE push_outbox SET attempts = ? WHERE seq = ?", (attempts, seq)
            )
        )

    async def remove_delivery(self, seq: int) -> None:
        await self._db.run(lambda c: c.execute("DELETE FROM push_outbox WHERE seq = ?", (seq,)))
