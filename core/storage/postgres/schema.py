"""The PostgreSQL schema as numbered migrations, applied in order, each once.

`schema_migrations` records the versions applied. A daemon applies the missing ones when it
opens the database (under an advisory lock, so replicas starting together apply each once);
`a2a-wrapper migrate CONFIG` does the same alone, before an upgrade's replicas start. A
database whose version is newer than this code knows is refused: an older replica must not
write a schema it does not understand (docs/operations.md#upgrades).

A migration is never edited once released: a change is a new one appended to `MIGRATIONS`.
Adding a store's table is one more entry here (and one store module beside the others).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import asyncpg
import structlog
from asyncpg import Connection, Record
from asyncpg.pool import PoolConnectionProxy

log = structlog.get_logger(__name__)

# A string: asyncpg's classes are generic for the type checker only.
Conn: TypeAlias = "PoolConnectionProxy[Record] | Connection[Record]"


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer a2a-wrapper than this one."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "tasks, sessions, push, usage, replicas",
        """
        CREATE TABLE replicas (
            id TEXT PRIMARY KEY,
            started_at TIMESTAMPTZ NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL
        );
        CREATE TABLE tasks (
            principal TEXT NOT NULL,
            id TEXT NOT NULL,
            context_id TEXT NOT NULL,
            state TEXT NOT NULL,
            status_ts TEXT NOT NULL,
            body TEXT NOT NULL,
            replica TEXT NOT NULL,
            PRIMARY KEY (principal, id)
        );
        CREATE INDEX tasks_by_time ON tasks (principal, status_ts DESC, id DESC);
        CREATE INDEX tasks_active ON tasks (replica)
            WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING');
        CREATE INDEX tasks_by_status_ts ON tasks (status_ts);
        CREATE TABLE sessions (
            principal TEXT NOT NULL,
            context_id TEXT NOT NULL,
            backend TEXT NOT NULL,
            session_id TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            last_used_at TIMESTAMPTZ NOT NULL,
            turns INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (principal, context_id)
        );
        CREATE INDEX sessions_by_creation ON sessions (created_at);
        CREATE TABLE session_tombstones (
            principal TEXT NOT NULL,
            context_id TEXT NOT NULL,
            expired_at TIMESTAMPTZ NOT NULL,
            PRIMARY KEY (principal, context_id)
        );
        CREATE INDEX session_tombstones_by_expiry ON session_tombstones (expired_at);
        CREATE SEQUENCE push_configs_created;
        CREATE TABLE push_configs (
            principal TEXT NOT NULL,
            task_id TEXT NOT NULL,
            id TEXT NOT NULL,
            version TEXT NOT NULL,
            body TEXT NOT NULL,
            created BIGINT NOT NULL DEFAULT nextval('push_configs_created'),
            PRIMARY KEY (principal, task_id, id)
        );
        CREATE INDEX push_configs_by_task ON push_configs (task_id);
        CREATE TABLE push_outbox (
            seq BIGSERIAL PRIMARY KEY,
            principal TEXT NOT NULL,
            version TEXT NOT NULL,
            config TEXT NOT NULL,
            body TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            replica TEXT NOT NULL
        );
        CREATE INDEX push_outbox_by_replica ON push_outbox (replica, seq);
        CREATE TABLE turn_usage (
            id BIGSERIAL PRIMARY KEY,
            task_id TEXT NOT NULL,
            principal TEXT NOT NULL,
            context_id TEXT NOT NULL,
            at DOUBLE PRECISION NOT NULL,
            input_tokens BIGINT NOT NULL,
            output_tokens BIGINT NOT NULL,
            cache_read_tokens BIGINT NOT NULL,
            cache_creation_tokens BIGINT NOT NULL,
            cost_usd DOUBLE PRECISION NOT NULL,
            model TEXT
        );
        CREATE INDEX turn_usage_by_time ON turn_usage (at);
        """,
    ),
    Migration(
        2,
        "task events",
        """
        CREATE TABLE task_events (
            seq BIGSERIAL PRIMARY KEY,
            principal TEXT NOT NULL,
            task_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            body TEXT NOT NULL
        );
        CREATE INDEX task_events_by_task ON task_events (task_id, seq);
        """,
    ),
    Migration(
        3,
        "context owners, forwarded turns",
        """
        CREATE TABLE context_owners (
            principal TEXT NOT NULL,
            context_id TEXT NOT NULL,
            replica TEXT NOT NULL,
            PRIMARY KEY (principal, context_id)
        );
        CREATE INDEX context_owners_by_replica ON context_owners (replica);
        CREATE TABLE turn_requests (
            id BIGSERIAL PRIMARY KEY,
            target TEXT NOT NULL,
            principal TEXT NOT NULL,
            version TEXT NOT NULL,
            body TEXT NOT NULL,
            state TEXT NOT NULL DEFAULT 'queued',
            task_id TEXT,
            from_seq BIGINT,
            error_kind TEXT,
            error TEXT,
            created_at TIMESTAMPTZ NOT NULL DEFAULT now()
        );
        """,
    ),
    Migration(
        4,
        "workspaces",
        """
        CREATE TABLE workspaces (
            principal TEXT NOT NULL,
            context_id TEXT NOT NULL,
            mode TEXT NOT NULL,
            path TEXT NOT NULL,
            branch TEXT NOT NULL,
            base TEXT NOT NULL,
            created_at TIMESTAMPTZ NOT NULL,
            git_dir TEXT,
            PRIMARY KEY (principal, context_id)
        );
        """,
    ),
)

LATEST = MIGRATIONS[-1].version
# pg_advisory_xact_lock key: one migrating replica at a time.
_MIGRATION_LOCK = 0x61326177  # "a2aw"


async def migrate(conn: Conn) -> list[int]:
    """Apply every migration the database lacks, in order, in one transaction (a failure
    applies none); returns the versions applied. SchemaTooNewError when the database is ahead
    of this code."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations ("
            "version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
        current = await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        if current > LATEST:
            raise SchemaTooNewError(
                f"the database schema is at version {current}, newer than this a2a-wrapper "
                f"knows ({LATEST}): upgrade this replica"
            )
        applied = []
        for migration in MIGRATIONS:
            if migration.version <= current:
                continue
            await conn.execute(migration.sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name) VALUES ($1, $2)",
                migration.version,
                migration.name,
            )
            applied.append(migration.version)
    if applied:
        log.info("storage.migrated", versions=applied)
    return applied


async def schema_version(conn: Conn) -> int:
    exists = await conn.fetchval("SELECT to_regclass('schema_migrations') IS NOT NULL")
    if not exists:
        return 0
    return int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"))


CONNECT_TIMEOUT = 10.0


async def migrate_database(url: str) -> tuple[int, list[int]]:
    """`a2a-wrapper migrate`: connect to `url`, apply what is missing; (version now, applied)."""
    conn = await asyncpg.connect(url, timeout=CONNECT_TIMEOUT)
    try:
        applied = await migrate(conn)
        return await schema_version(conn), applied
    finally:
        await conn.close()
