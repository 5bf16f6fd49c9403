"""A replica's part in the cluster (`storage.kind: "postgres"`): renew its lease every
`cluster.heartbeat`, and take over what replicas whose lease expired left: their running
tasks are marked FAILED with `REPLICA_LOST` (the failover check), and their undelivered
pushes are delivered from here. Each check runs on every
replica; the rows it changes are locked (`FOR UPDATE SKIP LOCKED`), so each lost task is
failed by one survivor, once."""

from __future__ import annotations

from datetime import timedelta

import anyio
import structlog
from anyio.abc import TaskStatus

from core.push.dispatcher import PushDispatcher
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.push import PostgresPushStore
from core.storage.tasks import TaskStore

log = structlog.get_logger(__name__)

REPLICA_LOST = (
    "The a2a-wrapper replica running this task was lost (stopped or unreachable) before it "
    "finished; send it again."
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
    ) -> None:
        """`push`: its store is the PostgreSQL one; each check hands it the deliveries lost
        replicas left."""
        self._db = db
        self._tasks = tasks
        self._heartbeat = heartbeat.total_seconds()
        self._push = push

    @property
    def replica_id(self) -> str:
        return self._db.replica_id

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Heartbeat and failover until cancelled (the stores must be open). A failed check
        is logged and tried again at the next heartbeat."""
        task_status.started()
        while True:
            await anyio.sleep(self._heartbeat)
            try:
                await self.check()
            except Exception:
                log.exception("cluster.heartbeat_failed", replica=self.replica_id)

    async def check(self) -> int:
        """One heartbeat: renew this replica's lease, fail the tasks of lost replicas; returns
        how many were failed."""
        if not await self._db.renew():
            # Frozen or cut off past its lease: survivors already took its tasks. It joins
            # again under the same id (its tasks still running here write on).
            log.warning("cluster.lease_lost", replica=self.replica_id)
            await self._db.rejoin()
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
