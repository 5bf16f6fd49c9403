"""Scheduling: an admitted turn waits for its context's lane and a turn slot, then runs, in
the service's own task group (a dropped client never cancels work); cancel and shutdown stop
turns through their runs."""

from __future__ import annotations

from typing import Any, Literal

import anyio
import structlog
from anyio.abc import TaskGroup

from core.backend import Turn
from core.engine.config import Timeouts
from core.engine.control.requested import NO_SETUP, TurnSetup
from core.engine.lanes import Lane
from core.engine.limits import TurnPlaces
from core.engine.observer import NO_OBSERVER, TurnObserver
from core.engine.queries import LiveRuns
from core.engine.run_state import RunState
from core.engine.task_run import TaskRun
from core.engine.turn.content import part_to_content
from core.engine.turn.driver import TurnDriver, fail_crashed
from core.engine.turn.plugins import TurnBudget
from core.engine.wrapper_section import WRAPPER_METADATA_KEY
from core.wire.errors import StorageUnavailableError
from core.wire.models import SendMessageRequest

log = structlog.get_logger(__name__)

SHUTDOWN_REASON = (
    "The a2a-wrapper daemon shut down while this task was running, and the turn did not "
    "finish within server.shutdownTimeout; send it again."
)


class Scheduler:
    def __init__(
        self,
        driver: TurnDriver,
        places: TurnPlaces,
        live: LiveRuns,
        timeouts: Timeouts,
        approvals: Literal["policy", "ask"],
        *,
        budget: TurnBudget,
        observer: TurnObserver = NO_OBSERVER,
    ) -> None:
        self._driver = driver
        self._observer = observer
        self._lanes = places.lanes
        self._slots = places.slots
        self._budget = budget
        self._live = live
        self._timeouts = timeouts
        self._approvals = approvals
        self.task_group: TaskGroup | None = None

    def start(
        self, run: TaskRun, lane: Lane, request: SendMessageRequest, setup: TurnSetup = NO_SETUP
    ) -> None:
        """Run the admitted turn as `setup` says (its options, the session it forks)."""
        if self.task_group is None:
            raise RuntimeError("task service is not running")
        if lane.holders > 1:
            # Queued behind another turn: show the task now rather than after that turn.
            run.announce()
        message = request.message
        turn = Turn(
            principal=run.principal,
            context_id=run.task.context_id,
            task_id=run.task.id,
            message_id=message.message_id,
            session_id=None,
            parts=tuple(part_to_content(p) for p in message.parts),
            metadata=_metadata(request, setup),
            approvals=self._approvals,
            options=setup.options,
            fork_of=setup.fork_of,
        )
        self._observer.admitted(run, turn)
        self.task_group.start_soon(self._drive, run, turn, lane)

    async def _drive(self, run: TaskRun, turn: Turn, lane: Lane) -> None:
        """One turn, in the service's task group. Whatever goes wrong (the backend, even the
        store) ends this turn only, never the service."""
        waiting = True
        try:
            with anyio.CancelScope() as queued:
                run.hold(queued)
                async with self._lanes.turn(run.principal, run.task.context_id, lane, run.task.id):
                    if run.state is RunState.QUEUED:
                        async with self._slots.turn(run.principal):
                            waiting = False
                            if run.state is RunState.QUEUED:
                                self._observer.started(run, turn)
                                await self._driver.run(run, turn)
        except StorageUnavailableError as exc:
            # The store refused the task's write (StaleWriteError: a replica that lost its
            # lease, a task ended elsewhere) or cannot be reached: the turn is over here.
            log.warning("turn.not_stored", task_id=run.task.id, error=type(exc).__name__)
        except Exception:  # noqa: BLE001 - fail_crashed logs it with its traceback
            await fail_crashed(run)
        finally:
            if waiting:
                self._slots.withdraw()
            # A turn that never ran (cancelled while queued, refused by a hook) holds its
            # budget reservation until now; one that ran gave it back as it ended.
            self._budget.unreserve(run.task.id)
            await self._moved_up(run.principal, lane)
            self._observer.ended(run, started=not waiting)
            run.finish()
            self._live.release(run)

    async def _moved_up(self, principal: str, lane: Lane) -> None:
        """A turn left the lane: each task still waiting in it says its new place."""
        if not lane.order:
            return  # nobody waits (the common case): no shielded scope to enter
        with anyio.CancelScope(shield=True):
            for task_id in list(lane.order):
                run = self._live.get(principal, task_id)
                try:
                    if run is not None and run.state is RunState.QUEUED:
                        await run.requeue(lane.queue_of(task_id))
                except Exception:
                    log.warning("task.queue_not_stored", task_id=task_id, exc_info=True)

    async def cancel(self, run: TaskRun) -> None:
        """Stop the run's turn and wait (bounded) until the agent stopped; a queued turn never
        starts, its place goes to the next one at once, and the tasks behind it move up."""
        await run.stop(None)
        with anyio.move_on_after(self._timeouts.stop_bound):
            await run.finished()

    async def stop_now(self, reason: str) -> int:
        """Stop every turn in flight here at once (the agents interrupted), waiting (bounded)
        until they stopped; returns how many. A replica that lost its lease does this."""
        runs = [r for r in self._live if r.in_flight]
        for run in runs:
            if run.state is not RunState.STOPPING:
                await run.stop(reason)
        with anyio.move_on_after(self._timeouts.stop_bound):
            for run in runs:
                await run.finished()
        return len(runs)

    async def stop_all(self) -> None:
        """Shutdown: queued turns, and turns paused on an approval question, fail now; running
        ones get up to the shutdown timeout to finish, then are stopped (the agent
        interrupted) and fail with the shutdown reason."""
        runs = [r for r in self._live if r.in_flight]
        for run in runs:
            if run.state is RunState.QUEUED:
                await run.stop(SHUTDOWN_REASON)
        for run in runs:
            if run.state is RunState.PAUSED:
                # Paused on a person's answer: it cannot finish by itself, stop it now.
                await run.stop(SHUTDOWN_REASON)
        with anyio.move_on_after(self._timeouts.shutdown):
            for run in runs:
                await run.finished()
        for run in runs:
            if run.state in (RunState.RUNNING, RunState.STOPPING):
                await run.stop(SHUTDOWN_REASON)
        with anyio.move_on_after(self._timeouts.stop_bound):
            for run in runs:
                await run.finished()


def _metadata(request: SendMessageRequest, setup: TurnSetup) -> dict[str, Any]:
    """The turn's metadata: the request's, with the fork's source context (however the caller
    sent it) where the plugins read it: `a2aWrapper.forkFrom`."""
    metadata = dict(request.metadata or {})
    if setup.fork_from is not None:
        section = metadata.get(WRAPPER_METADATA_KEY)
        section = dict(section) if isinstance(section, dict) else {}
        metadata[WRAPPER_METADATA_KEY] = {**section, "forkFrom": setup.fork_from}
    return metadata
