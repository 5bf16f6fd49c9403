"""The stores a daemon's settings name: memory, one SQLite file, or the replicas' shared
PostgreSQL database (`storage.kind`). Every store of a daemon shares one database object (one
SQLite connection, or one PostgreSQL pool and replica identity)."""

from __future__ import annotations

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

Database = SqliteDatabase | PostgresDatabase | None


def build_database(settings: Settings) -> Database:
    """The one database the stores share, or None for the memory stores."""
    storage = settings.storage
    if storage.kind == "memory":
        return None
    if storage.kind == "postgres":
        return PostgresDatabase(
            storage.url or "", lease_ttl=timedelta(milliseconds=settings.cluster.lease_ttl)
        )
    return SqliteDatabase(storage.resolved_path(), name="daemon database")


def build_store(db: Database) -> TaskStore:
    if isinstance(db, PostgresDatabase):
        return PostgresTaskStore(db)
    if db is None:
        return InMemoryTaskStore()
    return SqliteTaskStore(db.path, db=db)


def build_session_store(db: Database) -> SessionStore:
    if isinstance(db, PostgresDatabase):
        return PostgresSessionStore(db)
    if db is None:
        return InMemorySessionStore()
    return SqliteSessionStore(db.path, db=db)


def build_push_store(db: Database) -> PushStore:
    if isinstance(db, PostgresDatabase):
        return PostgresPushStore(db)
    if db is None:
        return InMemoryPushStore()
    return SqlitePushStore(db.path, db=db)


def build_usage_store(db: Database) -> UsageStore:
    if isinstance(db, PostgresDatabase):
        return PostgresUsageStore(db)
    if db is None:
        return InMemoryUsageStore()
    return SqliteUsageStore(db.path, db=db)
