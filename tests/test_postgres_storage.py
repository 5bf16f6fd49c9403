"""storage.kind "postgres" in the real app (in process): what a stop leaves behind (nothing:
no connection, no lease), the lease heartbeat's renewals from the database clock, a lost
LISTEN connection, and a schema newer than the code."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
import pytest
from aiohttp.test_utils import TestClient

from core.daemon import create_app
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.schema import SchemaTooNewError
from tests.conftest import make_settings
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend
from tests.support.wire import call, user_message

AiohttpClient = Callable[..., Awaitable[TestClient[Any, Any]]]


async def connections_to(conn: asyncpg.Connection, database: str) -> int:
    count: int = await conn.fetchval(
        "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
        database,
    )
    return count


async def test_a_stopped_replica_leaves_no_connection_and_no_lease(
    aiohttp_client: AiohttpClient, postgres_url: str
) -> None:
    settings = make_settings(
        storage={"kind": "postgres", "url": postgres_url},
        cluster={"leaseTtl": 1000, "heartbeat": 100},
        push={"enabled": True},
    )
    client = await aiohttp_client(create_app(settings, backend=ScriptedBackend()))
    reply = await call(client, "SendMessage", {"message": user_message("echo: hi")})
    assert reply["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    database = postgres_url.rsplit("/", 1)[-1]
    check = await asyncpg.connect(postgres_url)
    try:
        first = await check.fetchval("SELECT expires_at FROM replicas")
        # The heartbeat (every 100 ms) moves the lease on.
        renewed = await until(
            lambda: check.fetchval("SELECT expires_at FROM replicas"), lambda at: at > first
        )
        assert renewed > first
        # The pool, the listener: connections while it runs.
        assert await connections_to(check, database) >= 2

        await client.close()

        # The client side is closed when close() returns; each server process leaves
        # pg_stat_activity as it exits, just after.
        left = await until(lambda: connections_to(check, database), lambda n: n == 0)
        assert left == 0
        assert await check.fetchval("SELECT COUNT(*) FROM replicas") == 0
        events = await check.fetchval("SELECT COUNT(*) FROM task_events")
        assert events >= 3  # the task's snapshot, WORKING and COMPLETED at least
    finally:
        await check.close()


async def test_a_lost_listening_connection_is_opened_again(
    aiohttp_client: AiohttpClient, postgres_url: str
) -> None:
    """The server cuts the replica's LISTEN connection: the replica opens a new one."""
    settings = make_settings(storage={"kind": "postgres", "url": postgres_url})
    backend = ScriptedBackend()
    client = await aiohttp_client(create_app(settings, backend=backend))
    check = await asyncpg.connect(postgres_url)

    async def listener_pid() -> int | None:
        pid: int | None = await check.fetchval(
            "SELECT pid FROM pg_stat_activity WHERE query LIKE 'LISTEN %' "
            "AND datname = current_database()"
        )
        return pid

    try:
        first = await until(listener_pid, lambda pid: pid is not None)
        assert first is not None
        await check.execute("SELECT pg_terminate_backend($1)", first)

        again = await until(listener_pid, lambda pid: pid is not None and pid != first)

        assert again is not None
        assert again != first
    finally:
        await check.close()
        await client.close()


async def test_a_database_migrated_by_a_newer_version_is_refused(postgres_url: str) -> None:
    db = PostgresDatabase(postgres_url)
    await db.open()
    await db.execute("INSERT INTO schema_migrations (version, name) VALUES (99, 'future')")
    await db.close()

    with pytest.raises(SchemaTooNewError, match="version 99, newer than this a2a-wrapper"):
        await PostgresDatabase(postgres_url).open()
