"""storage.kind "postgres" in the real app (in process): what a stop leaves behind (nothing:
no connection, no lease), and the lease heartbeat's renewals from the database clock."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import asyncpg
from aiohttp.test_utils import TestClient

from core.server.app import create_app
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

        assert await connections_to(check, database) == 0
        assert await check.fetchval("SELECT COUNT(*) FROM replicas") == 0
        events = await check.fetchval("SELECT COUNT(*) FROM task_events")
        assert events >= 3  # the task's snapshot, WORKING and COMPLETED at least
    finally:
        await check.close()
