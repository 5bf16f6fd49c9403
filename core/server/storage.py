"""The stores a daemon's settings name: memory, one SQLite file, or the replicas' shared
PostgreSQL database (`storage.kind`). Every store of a daemon shares one database object (one
SQLite connection, or one PostgreSQL pool and replica identity)."""

from __future__ import annotations

from datetime import timedelta

from core.instance.records import SCHEMA as INSTANCE_SCHEMA
from core.pg_db import PostgresDatabase
from core.sessions.pg_store import PostgresSessionStore
from core.sessions.sqlite_store import SqliteSessionStore
from core.sessions.store import InMemorySessionStore, SessionStore
from core.settings import Settings
from core.sqlite_db import ForeignStorageError, SqliteDatabase
from core.tasks.pg_store import PostgresTaskStore
from core.tasks.push_pg import PostgresPushStore
from core.tasks.push_sqlite import SqlitePushStore
from core.tasks.push_store import InMemoryPushStore, PushStore
from core.tasks.sqlite_store import SqliteTaskStore
from core.tasks.startup import StorageStartError
from core.tasks.store import InMemoryTaskStore, TaskStore
from core.tasks.usage_pg import PostgresUsageStore
from core.tasks.usage_store import InMemoryUsageStore, SqliteUsageStore, UsageStore

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


def check_storage(settings: Settings) -> None:
    """Before anything is written: a SQLite storage file that exists must be this daemon's
    (StorageStartError, one line, otherwise). The tables it may hold are those of every store
    and of the instance records."""
    db = build_database(settings)
    if not isinstance(db, SqliteDatabase):
        return
    for build in (build_store, build_session_store, build_push_store, build_usage_store):
        build(db)
    db.add_schema(INSTANCE_SCHEMA)
    try:
        db.check_ours()
    except ForeignStorageError as exc:
        raise StorageStartError(str(exc)) from exc
