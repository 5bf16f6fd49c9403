"""PostgreSQL usage store: `turn_usage` in the replicas' shared database, so every replica's
budgets add up the turns of all of them (as loaded at its start)."""

from __future__ import annotations

from dataclasses import astuple

from core.storage.contracts import TurnUsage
from core.storage.postgres.database import PostgresStore
from core.storage.queued import Queued
from core.storage.rows import ROW_ERRORS, USAGE_COLUMNS, decode_usage


class PostgresUsageStore(PostgresStore):
    def add(self, usage: TurnUsage) -> Queued[None]:
        return self._add(usage)

    async def _add(self, usage: TurnUsage) -> None:
        await self._db.execute(
            f"INSERT INTO turn_usage ({USAGE_COLUMNS}) VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10)",  # noqa: S608 - fixed columns
            *astuple(usage),
        )

    async def load(self) -> list[TurnUsage]:
        rows: list[TurnUsage] = []
        for record in await self._db.fetch(
            f"SELECT id, {USAGE_COLUMNS} FROM turn_usage ORDER BY at"  # noqa: S608 - fixed columns
        ):
            row_id, *row = tuple(record)
            try:
                rows.append(decode_usage(tuple(row)))
            except ROW_ERRORS as exc:
                self._db.unreadable("turn_usage", {"id": row_id}, exc)
        return rows
