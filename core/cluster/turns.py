"""Ownership of contexts across replicas (storage.kind "postgres"), and turns forwarded to
the owner.

A context is owned by one replica (`context_owners`), the one that ran its first turn; the
owner keeps the warm agent, the agent's local session files and its working directory. The
owner's lease is its replica lease (storage/postgres/database.py: one row per replica, renewed
by the heartbeat, expiry from the database clock), so renewing it renews all its contexts at once.

A turn that reaches another replica is queued in `turn_requests` for the owner and announced
to it (NOTIFY on TURNS_CHANNEL); the owner takes it (a conditional UPDATE: taken once), admits
it as if it had been sent there, and answers with the task id and the `seq` of the Task
snapshot that starts its events. The receiving replica then serves the caller from the task's
events (core/cluster/events.py): a stream, a blocking send or a non-blocking one alike. A
refusal (a busy context, a budget, a bad request) comes back as the same error. A context whose
owner is not live (its lease expired, or it stopped) is taken by the replica that received the
turn.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from datetime import timedelta

import anyio
import asyncpg
import structlog
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from core.cluster.events import ClusterEvents, RemoteWatch
from core.storage.contracts import PushVersion
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.tasks import EVENTS_CHANNEL, TURNS_CHANNEL
from core.wire import errors
from core.wire.errors import DaemonError, InternalError
from core.wire.models import SendMessageRequest

log = structlog.get_logger(__name__)

LocalTurn = Callable[[str, SendMessageRequest, PushVersion], Awaitable[str]]

NOT_TAKEN = (
    "The a2a-wrapper replica that holds this conversation did not take the message in time; "
    "send it again."
)


class ClusterTurns:
    def __init__(self, db: PostgresDatabase, events: ClusterEvents, answer_wait: timedelta) -> None:
        """`answer_wait`: how long a forwarded turn waits for the owner to take it."""
        self._db = db
        self._events = events
        self._answer_wait = answer_wait.total_seconds()
        self.on_turn: LocalTurn | None = None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Take the turns other replicas queue for this one, until cancelled."""
        send, receive = anyio.create_memory_object_stream[int](math.inf)
        self._events.turns = send
        try:
            task_status.started()
            await self._take_each(receive)
        finally:
            self._events.turns = None
            send.close()

    async def _take_each(self, queued: MemoryObjectReceiveStream[int]) -> None:
        async with queued, anyio.create_task_group() as tg:
            async for request_id in queued:
                tg.start_soon(self._take, request_id)

    # ----- ownership -------------------------------------------------------------------------

    async def owner_elsewhere(self, principal: str, context_id: str) -> str | None:
        """The live replica, other than this one, that owns the context; None when this one
        owns it now (it had no owner, or its owner is not live: this one takes it)."""
        me = self._db.replica_id
        taken = await self._db.fetchval(
            "INSERT INTO context_owners (principal, context_id, replica) VALUES ($1, $2, $3) "
            "ON CONFLICT (principal, context_id) DO UPDATE SET replica = EXCLUDED.replica "
            "WHERE context_owners.replica = EXCLUDED.replica OR context_owners.replica NOT IN "
            "(SELECT id FROM replicas WHERE expires_at > now()) RETURNING replica",
            principal,
            context_id,
            me,
        )
        if taken is not None:
            return None
        owner: str | None = await self._db.fetchval(
            "SELECT replica FROM context_owners WHERE principal = $1 AND context_id = $2",
            principal,
            context_id,
        )
        return owner if owner != me else None

    # ----- the receiving replica -------------------------------------------------------------

    async def forward(
        self, owner: str, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> RemoteWatch:
        """Queue the turn for `owner` and wait until it is taken: the events of its task from
        the turn's first on. Raises the owner's refusal, or InternalError(NOT_TAKEN)."""
        body = request.model_dump_json(by_alias=True, exclude_none=True)

        async def queue(conn: asyncpg.pool.PoolConnectionProxy[asyncpg.Record]) -> int:
            request_id: int = await conn.fetchval(
                "INSERT INTO turn_requests (target, principal, version, body) "
                "VALUES ($1, $2, $3, $4) RETURNING id",
                owner,
                principal,
                version,
                body,
            )
            await conn.execute("SELECT pg_notify($1, $2)", TURNS_CHANNEL, f"{owner} {request_id}")
            return request_id

        request_id = await self._db.run(queue)

        async def answered() -> asyncpg.Record | None:
            row = await self._db.fetchrow(
                "SELECT state, task_id, from_seq, error_kind, error FROM turn_requests "
                "WHERE id = $1 AND state IN ('admitted', 'refused')",
                request_id,
            )
            return row

        row = None
        with anyio.move_on_after(self._answer_wait):
            row = await self._events.wait_announced(f"turn:{request_id}", answered)
        if row is None:
            # Not taken in time: withdrawn, so a late owner does not run it too.
            await self._db.execute(
                "UPDATE turn_requests SET state = 'withdrawn' WHERE id = $1 AND state = 'queued'",
                request_id,
            )
            row = await answered()
        await self._db.execute("DELETE FROM turn_requests WHERE id = $1", request_id)
        if row is None:
            raise InternalError(NOT_TAKEN)
        if row["state"] == "refused":
            raise _error(row["error_kind"], row["error"])
        return self._events.watch(principal, row["task_id"], row["from_seq"])

    # ----- the owner -------------------------------------------------------------------------

    async def _take(self, request_id: int) -> None:
        row = await self._db.fetchrow(
            "UPDATE turn_requests SET state = 'running' WHERE id = $1 AND target = $2 "
            "AND state = 'queued' RETURNING principal, version, body",
            request_id,
            self._db.replica_id,
        )
        if row is None or self.on_turn is None:
            return
        try:
            request = SendMessageRequest.model_validate_json(row["body"])
            task_id = await self.on_turn(row["principal"], request, row["version"])
            await self._events.flushed()
            from_seq = await self._db.fetchval(
                "SELECT MAX(seq) FROM task_events WHERE task_id = $1 AND kind = 'task'", task_id
            )
            await self._answer(
                request_id,
                "UPDATE turn_requests SET state = 'admitted', task_id = $2, from_seq = $3 "
                "WHERE id = $1",
                task_id,
                from_seq,
            )
        except DaemonError as exc:
            await self._answer(
                request_id,
                "UPDATE turn_requests SET state = 'refused', error_kind = $2, error = $3 "
                "WHERE id = $1",
                _wire_kind(exc),
                exc.message,
            )
        except Exception:
            log.exception("cluster.turn_failed", request_id=request_id)
            await self._answer(
                request_id,
                "UPDATE turn_requests SET state = 'refused', error_kind = $2, error = $3 "
                "WHERE id = $1",
                "InternalError",
                InternalError.default_message,
            )

    async def _answer(self, request_id: int, update: str, *args: object) -> None:
        async def write(conn: asyncpg.pool.PoolConnectionProxy[asyncpg.Record]) -> None:
            await conn.execute(update, request_id, *args)
            await conn.execute("SELECT pg_notify($1, $2)", EVENTS_CHANNEL, f"turn:{request_id}")

        await self._db.run(write)


def _error(kind: str | None, message: str | None) -> DaemonError:
    """The owner's refusal as the same error here (its class by name, its caller-safe
    message)."""
    found = getattr(errors, kind or "", None)
    if isinstance(found, type) and issubclass(found, DaemonError):
        return found(message)
    return InternalError(message)


def _wire_kind(exc: DaemonError) -> str:
    """The nearest class of `exc` that core.wire.errors defines (what the other side has)."""
    for cls in type(exc).__mro__:
        name: str = cls.__name__
        if getattr(errors, name, None) is cls:
            return name
    return "InternalError"


class ReplicaTasks:
    """The router's `Replicas` (core/cluster/router.py): events and cancels
    (`ClusterEvents`), ownership and forwarded turns (`ClusterTurns`)."""

    def __init__(self, events: ClusterEvents, turns: ClusterTurns) -> None:
        self.record = events.record
        self.running_elsewhere = events.running_elsewhere
        self.watch = events.watch
        self.cancel = events.cancel
        self.owner_elsewhere = turns.owner_elsewhere
        self.forward = turns.forward
