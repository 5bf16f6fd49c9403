"""A replica's part in the cluster (`storage.kind: "postgres"`): renew its lease every
`cluster.heartbeat`, and take over what replicas whose lease expired left: their running
tasks are marked FAILED with `REPLICA_LOST` (the failover check), and their undelivered
pushes are delivered from here. Each check runs on every
replica; the rows it changes are locked (`FOR UPDATE SKIP LOCKED`), so each lost task is
failed by one survivor, once.

A replica that finds its own lease expired (it was frozen or cut off longer than `leaseTtl`:
survivors may have failed its tasks and taken its contexts) logs it once, stops every turn it
runs (`on_lease_lost`: the agents interrupted), fails what it left running, and only then joins
again. Until then every task and event write it makes is refused by the database (the writes
are fenced by the lease, storage/postgres/tasks.py), and a refused write wakes the check at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta

import anyio
import structlog
from anyio.abc import TaskStatus

from core.push.dispatcher import PushDispatcher
from core.storage.contracts import TaskStore
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.push import PostgresPushStore
from core.wire.errors import StorageUnavailableError

log = structlog.get_logger(__name__)

REPLICA_LOST = (
    "The a2a-wrapper replica running this task was lost (stopped or unreachable) before it "
    "finished; send it again."
)
LEASE_LOST = (
    "The a2a-wrapper replica running this task lost its hold on the conversation (it was "
    "frozen or cut off for longer than cluster.leaseTtl) and stopped the turn; send it again."
)
# A lost replica's row is kept this long past its expiry (for operators), then deleted.
FORGET_AFTER = timedelta(minutes=10)


class Cluster:
    def __init__(
        self,
        db: PostgresDatabase,
        tasks: TaskStore,
        heartbeat: timedelta,
        push: PushDispatcher | None = None,
        on_lease_lost: Callable[[str], Awaitable[int]] | None = None,
    ) -> None:
        """`push`: its store is the PostgreSQL one; each check hands it the deliveries lost
        replicas left. `on_lease_lost(reason)`: stops every turn running here (the agents
        interrupted), returns how many."""
        self._db = db
        self._tasks = tasks
        self._heartbeat = heartbeat.total_seconds()
        self._push = push
        self._wake: anyio.Event | None = None
        self._on_lease_lost = on_lease_lost

    @property
    def replica_id(self) -> str:
        return self._db.replica_id

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Heartbeat and failover until cancelled (the stores must be open). A failed check
        is logged and tried again at the next heartbeat."""
        self._db.on_doubt = self._check_now
        task_status.started()
        while True:
            self._wake = anyio.Event()
            with anyio.move_on_after(self._heartbeat):
                await self._wake.wait()
            try:
                await self.check()
            except StorageUnavailableError:
                pass  # the database logs an outage once; the next heartbeat tries again
            except Exception:
                log.exception("cluster.heartbeat_failed", replica=self.replica_id)

    async def check(self) -> int:
        """One heartbeat: renew this replica's lease, fail the tasks of lost replicas; returns
        how many were failed."""
        if not await self._db.renew():
            await self._lost()
        failed = await self._tasks.fail_unfinished(REPLICA_LOST)
        if failed:
            log.warning("cluster.lost_tasks_failed", failed=failed, replica=self.replica_id)
        if self._push is not None and isinstance(self._push.store, PostgresPushStore):
            taken = await self._push.store.take_over()
            if taken:
                log.warning("cluster.lost_pushes_taken", pending=len(taken))
            await self._push.adopt(taken)
        await self._db.forget_replicas(FORGET_AFTER)
        # A forwarded turn's row whose receiving replica died while it waited.
        await self._db.execute(
            "DELETE FROM turn_requests WHERE created_at < now() - $1::interval", FORGET_AFTER
        )
        return failed

    def _check_now(self) -> None:
        if self._wake is not None:
            self._wake.set()

    async def _lost(self) -> None:
        """The lease expired: stop every turn here first (their writes are refused while it
        is expired), fail what they left (this replica is not live, so its own tasks count),
        then join again under the same id."""
        stopped = await self._on_lease_lost(LEASE_LOST) if self._on_lease_lost else 0
        failed = await self._tasks.fail_unfinished(REPLICA_LOST)
        log.warning("cluster.lease_lost", replica=self.replica_id, stopped=stopped, failed=failed)
        await self._db.rejoin()
