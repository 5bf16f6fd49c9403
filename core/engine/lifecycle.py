"""The task service's life: open the stores, reconcile what a previous process left, start
the backend, run the background sweeps; at the end stop every turn, then close in reverse
order (style.md §12)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import anyio
import structlog
from anyio.abc import TaskGroup

from core.backend import Backend
from core.backend.base import serving
from core.engine.config import EngineConfig
from core.engine.queries import LiveRuns
from core.engine.scheduling import Scheduler
from core.engine.startup import BackendStartError, StorageStartError, failing_as
from core.engine.turn.plugins import TaskPush
from core.sessions.manager import SessionManager
from core.storage.contracts import TaskStore

log = structlog.get_logger(__name__)

RESTART_REASON = "The a2a-wrapper daemon restarted while this task was running; send it again."


class Lifecycle:
    def __init__(
        self,
        config: EngineConfig,
        *,
        store: TaskStore,
        backend: Backend,
        sessions: SessionManager,
        push: TaskPush | None,
        scheduler: Scheduler,
        live: LiveRuns,
    ) -> None:
        self._config = config
        self._store = store
        self._backend = backend
        self._sessions = sessions
        self._push = push
        self._scheduler = scheduler
        self._live = live
        self.draining = False
        self.sweeping_sessions = False
        self._drain_started = anyio.Event()

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Open the stores, reconcile, start the backend; on exit stop every turn, then close
        in reverse order."""
        self._drain_started = anyio.Event()
        with failing_as(StorageStartError):
            await self._store.open()
        try:
            with failing_as(StorageStartError):
                await self._sessions.store.open()
                if self._push is not None:
                    await self._push.open()
            try:
                with failing_as(StorageStartError):
                    failed = await self._store.fail_unfinished(RESTART_REASON)
                if failed:
                    log.warning("tasks.reconciled", failed=failed)
                # start(), then the backend's serve() in a group of its own (core.backend.base).
                backend = serving(self._backend, partial(failing_as, BackendStartError))
                try:
                    async with backend, anyio.create_task_group() as tg:
                        self._scheduler.task_group = tg
                        if self._push is not None:
                            await tg.start(self._push.serve)
                        await self._start_sweeps(tg)
                        try:
                            yield
                        finally:
                            await self.drain()
                            if self._push is not None:
                                # The last events (the shutdown's own) reach the outbox.
                                with anyio.move_on_after(self._config.timeouts.cancel):
                                    await self._push.flush()
                            tg.cancel_scope.cancel()
                finally:
                    self._scheduler.task_group = None
                    self.sweeping_sessions = False
                    await self._backend.aclose()
            finally:
                if self._push is not None:
                    await self._push.close()
                await self._sessions.store.close()
        finally:
            await self._store.close()

    async def wait_draining(self) -> None:
        await self._drain_started.wait()

    async def drain(self) -> None:
        """Before shutdown: fail every running or queued turn with the shutdown reason (waiting
        up to the shutdown timeout for agents to stop), then end every stream still open, so
        no request handler waits on work that will not come. Idempotent."""
        self.draining = True
        self._drain_started.set()
        await self._scheduler.stop_all()
        for run in self._live:
            run.end_streams()

    async def _start_sweeps(self, tg: TaskGroup) -> None:
        retention = self._config.retention
        if retention.tasks is not None:
            await self._sweep_once()
            if retention.sweep_interval > 0:
                tg.start_soon(self._sweep_forever)
        if self._sessions.expires and retention.session_sweep_interval > 0:
            self.sweeping_sessions = True
            tg.start_soon(self._sweep_sessions_forever)

    async def sweep(self) -> int:
        """Delete terminal tasks older than the retention period; returns how many."""
        if self._config.retention.tasks is None:
            return 0
        return await self._store.purge_terminal(self._sessions.now() - self._config.retention.tasks)

    async def _sweep_once(self) -> None:
        purged = await self.sweep()
        if purged:
            log.info("tasks.purged", count=purged)

    async def _sweep_forever(self) -> None:
        while True:
            await anyio.sleep(self._config.retention.sweep_interval)
            try:
                await self._sweep_once()
            except Exception:
                log.exception("tasks.sweep_failed")

    async def _sweep_sessions_forever(self) -> None:
        while True:
            await anyio.sleep(self._config.retention.session_sweep_interval)
            try:
                removed = await self._sessions.sweep()
            except Exception:
                log.exception("sessions.sweep_failed")
            else:
                log.info("sessions.swept", removed=removed)
