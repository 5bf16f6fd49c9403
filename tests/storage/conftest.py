"""The store contract suite's engines: every case of tests/storage runs on memory, SQLite and
PostgreSQL (a real server, a fresh database per test), on the stores as the daemon makes them,
`Storage` bundles from `storage_for`, sharing one database per engine.

`storage` is an opened bundle; `engine` makes further bundles on the same place (a second
replica, or the same file or database after a restart). Cases on what outlives a reopen take
`durable_engine` (SQLite and PostgreSQL: memory keeps nothing)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import pytest

from core.storage.kinds import Storage, StorageConfig, storage_for
from harness.postgres import fresh_database

ENGINES = ["memory", "sqlite", "postgres"]
DURABLE = ["sqlite", "postgres"]


@dataclass(frozen=True)
class Engine:
    config: StorageConfig

    @property
    def kind(self) -> str:
        return self.config.kind

    def bundle(self) -> Storage:
        """A new bundle on this engine's file or database (unopened)."""
        return storage_for(self.config)

    @asynccontextmanager
    async def opened(self) -> AsyncIterator[Storage]:
        storage = self.bundle()
        await storage.open()
        try:
            yield storage
        finally:
            await storage.close()

    def with_lease(self, lease_ttl: timedelta) -> Engine:
        return Engine(replace(self.config, lease_ttl=lease_ttl))


async def engine_of(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    url = ""
    if kind == "postgres":
        url = await fresh_database(request.getfixturevalue("postgres_server"))
    path = tmp_path / "tasks.sqlite3"
    return Engine(StorageConfig(kind=kind, path=path, url=url, lease_ttl=timedelta(seconds=15)))


@pytest.fixture(params=ENGINES)
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    return await engine_of(request.param, request, tmp_path)


@pytest.fixture(params=DURABLE)
async def durable_engine(request: pytest.FixtureRequest, tmp_path: Path) -> Engine:
    return await engine_of(request.param, request, tmp_path)


@pytest.fixture
async def storage(engine: Engine) -> AsyncIterator[Storage]:
    async with engine.opened() as opened:
        yield opened
