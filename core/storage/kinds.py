"""The stores a daemon's settings name (`storage.kind`), through one name -> implementation
table: memory, one SQLite file, or the replicas' shared PostgreSQL database. Every store of a
daemon shares one database object (one SQLite connection, or one PostgreSQL pool and replica
identity). A new storage engine is one entry here and its folder beside sqlite/ and
postgres/."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from core.settings import Settings
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.push import PostgresPushStore
from core.storage.postgres.sessions import PostgresSessionStore
from core.storage.postgres.tasks import PostgresTaskStore
from core.storage.postgres.usage import PostgresUsageStore
from core.storage.push import InMemoryPushStore, PushStore
from core.storage.sessions import InMemorySessionStore, SessionStore
from core.storage.sqlite.database import SqliteDatabase
from core.storage.sqlite.push import SqlitePushStore
from core.storage.sqlite.sessions import SqliteSessionStore
from core.storage.sqlite.tasks import SqliteTaskStore
from core.storage.tasks import InMemoryTaskStore, TaskStore
from core.storage.usage import InMemoryUsageStore, SqliteUsageStore, UsageStore


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

    def check_ours(self, *schemas: str) -> None:
        """SQLite: a storage file that exists must hold only tables of this daemon's stores
        (and `schemas`): ForeignStorageError otherwise. Nothing to check elsewhere (memory;
        PostgreSQL checks its schema version when it opens)."""
        if isinstance(self.database, SqliteDatabase):
            for schema in schemas:
                self.database.add_schema(schema)
            self.database.check_ours()


def memory(settings: Settings) -> Storage:
    return Storage(
        InMemoryTaskStore(), InMemorySessionStore(), InMemoryPushStore(), InMemoryUsageStore()
    )


def sqlite(settings: Settings) -> Storage:
    db = SqliteDatabase(settings.storage.resolved_path(), name="daemon database")
    return Storage(
        SqliteTaskStore(db.path, db=db),
        SqliteSessionStore(db.path, db=db),
        SqlitePushStore(db.path, db=db),
        SqliteUsageStore(db.path, db=db),
        database=db,
    )


def postgres(settings: Settings) -> Storage:
    lease_ttl = timedelta(milliseconds=settings.cluster.lease_ttl)
    db = PostgresDatabase(settings.storage.url or "", lease_ttl=lease_ttl)
    return Storage(
        PostgresTaskStore(db),
        PostgresSessionStore(db),
        PostgresPushStore(db),
        PostgresUsageStore(db),
        database=db,
        replicas=db,
    )


KINDS: dict[str, Callable[[Settings], Storage]] = {
    "memory": memory,
    "sqlite": sqlite,
    "postgres": postgres,
}


def storage_for(settings: Settings) -> Storage:
    """The stores `storage.kind` names (the settings allow only the names of KINDS)."""
    return KINDS[settings.storage.kind](settings)
