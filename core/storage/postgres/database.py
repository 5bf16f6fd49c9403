"""One PostgreSQL database shared by the replicas of one agent (`storage.kind: "postgres"`).

A `PostgresDatabase` is a connection pool (asyncpg) that every PostgreSQL store of a daemon
shares, the replica's identity and its lease row (`replicas`: id, expiry from the database
clock), and the versioned schema (`schema.py`), brought up to date when the first store opens
it (or alone by `a2a-wrapper migrate CONFIG`).

Replicas share nothing but this database. A replica's tasks, outbox rows and contexts are
marked with its id; once its lease has expired (it stopped renewing it: killed, frozen, cut
off), a survivor takes over what it left (`fail_orphans`, the push store's `pending`). Every
instant that decides between replicas (a lease's expiry, a task's age) comes from the
database's clock, never from a replica's, so replicas whose clocks disagree still agree.

A store write is one statement (or one transaction) on a pooled connection, run when it is
awaited: callers await their writes in the order they made them (core/storage/queued.py), so the
order holds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeAlias, TypeVar

import asyncpg
import structlog
from asyncpg.pool import PoolConnectionProxy

from core.storage.postgres.schema import CONNECT_TIMEOUT, migrate
from core.storage.sqlite.database import UnreadableRows
from core.wire.errors import StorageUnavailableError

log = structlog.get_logger(__name__)

T = TypeVar("T")

# What the stores are handed: a pooled connection (a transaction open on it).
# A string: asyncpg's classes are generic for the type checker only.
Conn: TypeAlias = "PoolConnectionProxy[asyncpg.Record]"

# A pool per daemon: request handlers, the turn writes, the heartbeat and the listener.
POOL_SIZE = 10

# What a call raises when the server cannot be reached (down, restarting, cut off, full).
UNREACHABLE: tuple[type[Exception], ...] = (
    OSError,  # refused, reset, unreachable; TimeoutError too
    asyncpg.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.TooManyConnectionsError,
    # What asyncpg raises for a connection that broke in the middle of an operation.
    asyncpg.exceptions.InternalClientError,
)


class PostgresDatabase:
    def __init__(
        self,
        url: str,
        *,
        lease_ttl: timedelta = timedelta(seconds=15),
        replica_id: str | None = None,
        name: str = "daemon database",
    ) -> None:
        self._url = url
        self._name = name
        self.lease_ttl = lease_ttl
        self._fixed_id = replica_id
        self.replica_id = replica_id or _new_replica_id()
        self._pool: asyncpg.Pool | None = None
        self._users = 0
        self.rows = UnreadableRows()
        # The database's clock minus this host's, measured at each lease write (see `clock`).
        self._skew = timedelta(0)
        # Called when a fenced write was refused (the heartbeat then checks the lease at once).
        self.on_doubt: Callable[[], None] | None = None
        self._down = False

    @contextmanager
    def _reaching(self) -> Iterator[None]:
        """A call to the server: its connection failures become StorageUnavailableError (a
        caller-safe, retryable error), logged once per outage, not per call."""
        try:
            yield
        except UNREACHABLE as exc:
            if not self._down:
                self._down = True
                log.warning("storage.unavailable", error=f"{type(exc).__name__}: {exc}")
            raise StorageUnavailableError from exc
        if self._down:
            self._down = False
            log.warning("storage.available_again")

    def doubt_lease(self) -> None:
        """A write fenced by this replica's lease was refused: it may have lost the lease."""
        if self.on_doubt is not None:
            self.on_doubt()

    @property
    def pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError(f"{self._name} is not open")
        return self._pool

    def unreadable(self, table: str, key: dict[str, object], exc: Exception) -> None:
        self.rows.report(table, key, exc)

    async def open(self) -> None:
        """Connect (the first of its users), migrate the schema, and take this replica's
        lease row."""
        self._users += 1
        if self._pool is not None:
            return
        # A replica is one run of a daemon: reopened, it is a new one (what the previous run
        # left is then taken over like any lost replica's).
        self.replica_id = self._fixed_id or _new_replica_id()
        try:
            # min_size 0: no floor to restore (asyncpg logs a traceback each time it cannot
            # while the server is down); idle connections stay pooled all the same.
            pool = await asyncpg.create_pool(
                self._url, min_size=0, max_size=POOL_SIZE, timeout=CONNECT_TIMEOUT
            )
            self._pool = pool
            try:
                async with pool.acquire() as conn:
                    await migrate(conn)
                await self.rejoin()
            except BaseException:
                self._pool = None
                await pool.close()
                raise
        except BaseException:
            self._users -= 1
            raise
        log.info("cluster.joined", replica=self.replica_id)

    async def close(self) -> None:
        """Close the pool once its last user closes; the lease row goes (a clean stop leaves
        nothing for a survivor to take over)."""
        self._users = max(0, self._users - 1)
        if self._users:
            return
        pool, self._pool = self._pool, None
        if pool is None:
            return
        try:
            await pool.execute("DELETE FROM replicas WHERE id = $1", self.replica_id)
        finally:
            await pool.close()

    async def run(self, fn: Callable[[Conn], Awaitable[T]]) -> T:
        """`fn` on a pooled connection, in one transaction. Every call here raises
        StorageUnavailableError when the server cannot be reached."""
        with self._reaching():
            async with self.pool.acquire() as conn:
                try:
                    async with conn.transaction():
                        return await fn(conn)
                except asyncpg.InterfaceError as exc:
                    if _cut(conn):  # in the middle of the transaction
                        raise ConnectionResetError(str(exc)) from exc
                    raise

    async def execute(self, query: str, *args: Any) -> str:
        with self._reaching():
            return await self.pool.execute(query, *args)

    async def fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        with self._reaching():
            return await self.pool.fetch(query, *args)

    async def fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        with self._reaching():
            return await self.pool.fetchrow(query, *args)

    async def fetchval(self, query: str, *args: Any) -> Any:
        with self._reaching():
            return await self.pool.fetchval(query, *args)

    def clock(self) -> datetime:
        """Now on the database's clock (this host's clock corrected by the offset measured at
        the last lease write): what session expiry and task retention read, so replicas whose
        clocks disagree still expire the same sessions and tasks."""
        return datetime.now(UTC) + self._skew

    async def _leased(self, query: str) -> datetime | None:
        """Run a lease write that returns the database's `now()`, and measure the offset of
        the database's clock from this host's (to the midpoint of the round trip)."""
        before = time.time()
        db_now: datetime | None = await self.fetchval(query, self.replica_id, self.lease_ttl)
        after = time.time()
        if db_now is not None:
            here = datetime.fromtimestamp((before + after) / 2, UTC)
            self._skew = db_now - here
        return db_now

    async def renew(self) -> bool:
        """Extend this replica's lease by `lease_ttl` from now (the database's now), only while
        it is live; False when it expired (or its row is gone): survivors may have taken its
        contexts and failed its tasks, so it must stop its turns before it `rejoin`s."""
        renewed = await self._leased(
            "UPDATE replicas SET expires_at = now() + $2 WHERE id = $1 AND expires_at > now() "
            "RETURNING now()"
        )
        return renewed is not None

    async def rejoin(self) -> None:
        await self._leased(
            "INSERT INTO replicas (id, started_at, expires_at) VALUES ($1, now(), now() + $2) "
            "ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at RETURNING now()"
        )

    async def forget_replicas(self, after: timedelta) -> None:
        """Delete the rows of replicas expired for longer than `after` (what they left is
        recognised as lost by its replica id not being live, row or no row)."""
        await self.execute("DELETE FROM replicas WHERE expires_at < now() - $1::interval", after)

    async def leads(self) -> bool:
        """True when this replica is the oldest live one: the one that runs the sweeps (the
        session TTL sweep, task retention), so they run on one replica at a time; when it is
        lost, the next oldest takes over once its lease has expired."""
        leader = await self.fetchval(
            "SELECT id FROM replicas WHERE expires_at > now() ORDER BY started_at, id LIMIT 1"
        )
        return bool(leader == self.replica_id)

    async def live_replicas(self) -> set[str]:
        rows = await self.fetch("SELECT id FROM replicas WHERE expires_at > now()")
        return {r["id"] for r in rows}


def _cut(conn: Conn) -> bool:
    """Whether the connection was lost (the pool takes back a connection it saw break, and
    the proxy then refuses every call)."""
    try:
        return conn.is_closed()
    except asyncpg.InterfaceError:
        return True


def _new_replica_id() -> str:
    return f"r-{os.urandom(6).hex()}"


def count_of(status: str) -> int:
    """The row count of a command status ("DELETE 3" -> 3)."""
    tail = status.rsplit(" ", 1)[-1]
    return int(tail) if tail.isdigit() else 0


async def exclusively(conn: Conn, job: str, fn: Callable[[], Awaitable[T]], otherwise: T) -> T:
    """Run `fn` (in `conn`'s open transaction) only if no other replica runs the job `job`
    now (a transaction-scoped advisory lock); else return `otherwise` at once."""
    taken = await conn.fetchval("SELECT pg_try_advisory_xact_lock(hashtext($1))", job)
    if not taken:
        return otherwise
    return await fn()


class PostgresStore:
    """What every PostgreSQL store is: a user of the daemon's one `PostgresDatabase`."""

    def __init__(self, db: PostgresDatabase) -> None:
        self._db = db

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()
