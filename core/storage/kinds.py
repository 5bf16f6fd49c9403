"""The stores a daemon's settings name (`storage.kind`), through one name -> implementation
table: memory, one SQLite file, or the replicas' shared PostgreSQL database. Every store of a
daemon shares one database object (one SQLite connection, or one PostgreSQL pool and replica
identity). A new storage engine is one entry in KINDS and its folder beside sqlite/ and
postgres/ (a database module and one module per store of core/storage/contracts.py).

The daemon (the composition root) builds the `StorageConfig` from its settings
(core/settings/sections.py): storage knows nothing of the settings model."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from core.storage.contracts import PushStore, SessionStore, TaskStore, UsageStore, WorkspaceStore
from core.storage.memory import (
    InMemoryPushStore,
    InMemorySessionStore,
    InMemoryTaskStore,
    InMemoryUsageStore,
    InMemoryWorkspaceStore,
)
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.push import PostgresPushStore
from core.storage.postgres.sessions import PostgresSessionStore
from core.storage.postgres.tasks import PostgresTaskStore
from core.storage.postgres.usage import PostgresUsageStore
from core.storage.postgres.workspaces import PostgresWorkspaceStore
from core.storage.sqlite.database import SqliteDatabase
from core.storage.sqlite.push import SqlitePushStore
from core.storage.sqlite.sessions import SqliteSessionStore
from core.storage.sqlite.tasks import SqliteTaskStore
from core.storage.sqlite.usage import SqliteUsageStore
from core.storage.sqlite.workspaces import SqliteWorkspaceStore


@dataclass(frozen=True)
class StorageConfig:
    """What the storage takes from the settings: `kind` (a name of KINDS), the SQLite file
    (`path`), the PostgreSQL DSN (`url`) and the replicas' lease (`lease_ttl`)."""

    kind: str
    path: Path
    url: str
    lease_ttl: timedelta


@dataclass(frozen=True)
class Storage:
    """One daemon's stores and the database they share (None for memory). `replicas` is
    that database when replicas share it (`storage.kind` "postgres": their leases, events and
    clock), None for a daemon on its own.

    `open` is the daemon's first step and `close` its last: each store opens and closes the
    shared database too (it counts its users), so the database is up before any of them and
    down only after all of them."""

    tasks: TaskStore
    sessions: SessionStore
    workspaces: WorkspaceStore
    push: PushStore
    usage: UsageStore
    database: SqliteDatabase | PostgresDatabase | None = None
    replicas: PostgresDatabase | None = None

    async def open(self) -> None:
        if self.database is not None:
            await self.database.open()

    async def close(self) -> None:
        if self.database is not None:
            await self.database.close()

    async def probe(self) -> None:
        """Raise unless the storage can take a write now (the readiness probe's first check:
        the task store's `probe`, which writes through the shared database)."""
        await self.tasks.probe()

    def check_ours(self, *schemas: str) -> None:
        """SQLite: a storage file that exists must hold only tables of this daemon's stores
        (and `schemas`): ForeignStorageError otherwise. Nothing to check elsewhere (memory;
        PostgreSQL checks its schema version when it opens)."""
        if isinstance(self.database, SqliteDatabase):
            for schema in schemas:
                self.database.add_schema(schema)
            self.database.check_ours()


def memory(config: StorageConfig) -> Storage:
    return Storage(
        InMemoryTaskStore(),
        InMemorySessionStore(),
        InMemoryWorkspaceStore(),
        InMemoryPushStore(),
        InMemoryUsageStore(),
    )


def sqlite(config: StorageConfig) -> Storage:
    db = SqliteDatabase(config.path, name="daemon database")
    return Storage(
        SqliteTaskStore(db.path, db=db),
        SqliteSessionStore(db.path, db=db),
        SqliteWorkspaceStore(db.path, db=db),
        SqlitePushStore(db.path, db=db),
        SqliteUsageStore(db.path, db=db),
        database=db,
    )


def postgres(config: StorageConfig) -> Storage:
    db = PostgresDatabase(config.url, lease_ttl=config.lease_ttl)
    return Storage(
        PostgresTaskStore(db),
        PostgresSessionStore(db),
        PostgresWorkspaceStore(db),
        PostgresPushStore(db),
        PostgresUsageStore(db),
        database=db,
        replicas=db,
    )


KINDS: dict[str, Callable[[StorageConfig], Storage]] = {
    "memory": memory,
    "sqlite": sqlite,
    "postgres": postgres,
}


def storage_for(config: StorageConfig) -> Storage:
    """The stores `config.kind` names (the settings allow only the names of KINDS)."""
    return KINDS[config.kind](config)
