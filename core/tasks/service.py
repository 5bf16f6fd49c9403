"""The task service: every A2A task operation, in v1 terms, independent of binding and dialect.

Rules implemented here (A2A v1.0 §3.1, §3.4; a2a-protocol.md §8): server-made task ids;
contextId inferred from the task and checked against it; INPUT_REQUIRED/AUTH_REQUIRED tasks
continue with the same id; terminal tasks are immutable; blocking waits for a terminal or
interrupted state; a dropped client never cancels work (turns run in the service's own task
group, not in the request).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from functools import partial
from typing import Literal

import anyio
import structlog
from anyio.abc import TaskGroup

from core.backend import Backend, Turn
from core.backend.base import serving
from core.sessions.manager import SessionManager
from core.sessions.store import InMemorySessionStore
from core.tasks import readiness
from core.tasks.approvals import answer_of
from core.tasks.content import part_to_content
from core.tasks.hooks import NO_HOOKS, Hooks
from core.tasks.lanes import Lane, TurnLanes
from core.tasks.limits import TurnSlots, check_message
from core.tasks.push import PushDispatcher
from core.tasks.push_configs import PushConfigs
from core.tasks.push_store import PushVersion, StoredConfig
from core.tasks.readiness import Readiness
from core.tasks.run import TaskRun, agent_message
from core.tasks.runner import (
    OutputMode,
    TurnRunner,
)
from core.tasks.startup import BackendStartError, StorageStartError, failing_as
from core.tasks.store import TaskQuery, TaskStore
from core.tasks.streams import EventStream, apply_history_length
from core.tasks.turns import TurnDriver, fail_crashed
from core.wire.base import utcnow
from core.wire.enums import TaskState
from core.wire.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from core.wire.models import (
    DEFAULT_PAGE_SIZE,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SendMessageRequest,
    StreamResponse,
    Task,
    TaskStatus,
)

log = structlog.get_logger(__name__)

RESTART_REASON = "The a2a-wrapper daemon restarted while this task was running; send it again."
SHUTDOWN_REASON = (
    "The a2a-wrapper daemon shut down while this task was running, and the turn did not "
    "finish within server.shutdownTimeout; send it again."
)


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        backend: Backend,
        *,
        sessions: SessionManager | None = None,
        session_cleanup_interval: float = 0.0,
        max_queued_turns: int = 16,
        max_concurrent_turns: int = 8,
        max_concurrent_turns_per_principal: int = 0,
        max_waiting_turns: int = 256,
        max_parts: int = 64,
        max_file_bytes: int = 8 * 1024 * 1024,
        cancel_timeout: float = 10.0,
        shutdown_timeout: float = 10.0,
        turn_timeout: float | None = None,
        idle_timeout: float | None = None,
        retention: timedelta | None = None,
        sweep_interval: float = 3600.0,
        output_mode: OutputMode = "final",
        progress: bool = True,
        reasoning: bool = False,
        debug_errors: bool = False,
        hooks: Hooks = NO_HOOKS,
        approvals: Literal["policy", "ask"] = "policy",
        approval_timeout: float | None = None,
        approval_on_timeout: Literal["deny", "fail"] = "deny",
        push: PushDispatcher | None = None,
    ) -> None:
        self._store = store
        self._approvals = approvals
        self._push = push
        self.push_configs = PushConfigs(push, self._load)
        self._backend = backend
        self._sessions = sessions or SessionManager(
            InMemorySessionStore(), backend.name, backend.drop_session
        )
        self._session_cleanup_interval = session_cleanup_interval
        self._sweeping_sessions = False
        self._driver = TurnDriver(
            backend,
            TurnRunner(
                backend,
                progress=progress,
                reasoning=reasoning,
                output_mode=output_mode,
                idle_timeout=idle_timeout,
                approval_timeout=approval_timeout,
                approval_on_timeout=approval_on_timeout,
                close_timeout=cancel_timeout,
            ),
            self._sessions,
            hooks=hooks,
            turn_timeout=turn_timeout,
            idle_timeout=idle_timeout,
            cancel_timeout=cancel_timeout,
            debug_errors=debug_errors,
        )
        self._lanes = TurnLanes(max_queued_turns)
        self._slots = TurnSlots(
            max_concurrent_turns, max_concurrent_turns_per_principal, max_waiting_turns
        )
        self._draining = False
        self._drain_started: anyio.Event
        self._max_parts = max_parts
        self._max_file_bytes = max_file_bytes
        self._live: dict[str, TaskRun] = {}
        self._tg: TaskGroup | None = None
        self._cancel_timeout = cancel_timeout
        # A stopped turn ends within this: closing the backend's generator and interrupt() are
        # each bounded by the cancel timeout, so a wait this long ends on the final state.
        self._stop_bound = 2 * cancel_timeout + 1
        self._shutdown_timeout = shutdown_timeout
        self._retention = retention
        self._sweep_interval = sweep_interval

    # ----- lifecycle -------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskService]:
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
                        self._tg = tg
                        if self._push is not None:
                            await tg.start(self._push.serve)
                        await self._start_sweeps(tg)
                        try:
                            yield self
                        finally:
                            await self.drain()
                            if self._push is not None:
                                # The last events (the shutdown's own) reach the outbox.
                                with anyio.move_on_after(self._cancel_timeout):
                                    await self._push.flush()
                            tg.cancel_scope.cancel()
                finally:
                    self._tg = None
                    self._sweeping_sessions = False
                    await self._backend.aclose()
            finally:
                if self._push is not None:
                    await self._push.close()
                await self._sessions.store.close()
        finally:
            await self._store.close()

    async def _start_sweeps(self, tg: TaskGroup) -> None:
        if self._retention is not None:
            await self._sweep_once()
            if self._sweep_interval > 0:
                tg.start_soon(self._sweep_forever)
        if self._sessions.expires and self._session_cleanup_interval > 0:
            self._sweeping_sessions = True
            tg.start_soon(self._sweep_sessions_forever)

    @property
    def draining(self) -> bool:
        """True once shutdown began: new messages are refused, running turns may finish."""
        return self._draining

    async def wait_draining(self) -> None:
        """Return once shutdown has begun."""
        await self._drain_started.wait()

    @property
    def push_enabled(self) -> bool:
        return self._push is not None

    @property
    def sessions(self) -> SessionManager:
        return self._sessions

    @property
    def sweeping_sessions(self) -> bool:
        """True while the background session sweep runs (ttl > 0 and cleanupInterval > 0)."""
        return self._sweeping_sessions

    async def _sweep_sessions_forever(self) -> None:
        while True:
            await anyio.sleep(self._session_cleanup_interval)
            try:
                removed = await self._sessions.sweep()
            except Exception:
                log.exception("sessions.sweep_failed")
            else:
                log.info("sessions.swept", removed=removed)

    async def drain(self) -> None:
        """Before shutdown: fail every running or queued turn with the shutdown reason (waiting
        up to `shutdown_timeout` for agents to stop), then end every stream still open, so no
        request handler waits on work that will not come. Idempotent."""
        await self._stop_turns()
        for run in list(self._live.values()):
            run.broker.close()

    async def _stop_turns(self) -> None:
        """Queued turns, and turns paused on an approval question, fail now; running ones get
        up to `shutdown_timeout` to finish, then are stopped (the agent interrupted) and fail
        with the shutdown reason."""
        self._draining = True
        self._drain_started.set()
        runs = [r for r in self._live.values() if r.running]
        for run in runs:
            if run.scope is None and not run.task.status.state.terminal:
                await run.set_status(
                    TaskState.FAILED, agent_message(run.task, [Part(text=SHUTDOWN_REASON)])
                )
                if run.queued_scope is not None:
                    run.queued_scope.cancel()
        for run in runs:
            if run.pending_approval is not None and run.scope is not None:
                # Paused on a person's answer: it cannot finish by itself, stop it now.
                run.stop_reason = SHUTDOWN_REASON
                run.scope.cancel()
        with anyio.move_on_after(self._shutdown_timeout):
            for run in runs:
                await run.finished.wait()
        for run in runs:
            if run.running and run.scope is not None:
                run.stop_reason = SHUTDOWN_REASON
                run.scope.cancel()
        with anyio.move_on_after(self._stop_bound):
            for run in runs:
                await run.finished.wait()

    async def sweep(self) -> int:
        """Delete terminal tasks older than the retention period; returns how many."""
        if self._retention is None:
            return 0
        return await self._store.purge_terminal(utcnow() - self._retention)

    async def _sweep_once(self) -> None:
        purged = await self.sweep()
        if purged:
            log.info("tasks.purged", count=purged)

    async def _sweep_forever(self) -> None:
        while True:
            await anyio.sleep(self._sweep_interval)
            try:
                await self._sweep_once()
            except Exception:
                log.exception("tasks.sweep_failed")

    async def readiness(self) -> Readiness:
        """Ready to work: the task store takes a write and the backend is healthy."""
        return await readiness.check(self._store, self._backend)

    @property
    def backend_name(self) -> str:
        return self._backend.name

    # ----- reads -----------------------------------------------------------------------------

    async def _load(self, principal: str, task_id: str) -> Task:
        run = self._live.get(task_id)
        if run is not None and run.principal == principal:
            return run.snapshot()
        task = await self._store.get(principal, task_id)
        if task is None:
            raise TaskNotFoundError
        return task

    async def get(self, principal: str, request: GetTaskRequest) -> Task:
        return apply_history_length(await self._load(principal, request.id), request.history_length)

    async def list(self, principal: str, request: ListTasksRequest) -> ListTasksResponse:
        page_size = request.page_size or DEFAULT_PAGE_SIZE
        page = await self._store.list(
            principal,
            TaskQuery(
                context_id=request.context_id,
                state=request.status,
                status_after=request.status_timestamp_after,
                page_size=page_size,
                page_token=request.page_token or None,
            ),
        )
        tasks = []
        for task in page.tasks:
            live = self._live.get(task.id)
            current = live.snapshot() if live is not None and live.principal == principal else task
            if not request.include_artifacts:
                current.artifacts = None
            tasks.append(apply_history_length(current, request.history_length))
        return ListTasksResponse(
            tasks=tasks,
            next_page_token=page.next_page_token,
            page_size=page_size,
            total_size=page.total_size,
        )

    # ----- sends -----------------------------------------------------------------------------

    async def send(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> Task | Message:
        """SendMessage: blocking by default, `returnImmediately` returns the task at once.
        `version` is the caller's protocol version, kept with an inline push config."""
        config = request.configuration
        history_length = config.history_length if config else None
        approval = await self._approval_answer(principal, request.message)
        if approval is not None:
            paused, answer = approval
            stream = self._watch(paused, at_interrupt=True)
            answer()
            if config is None or not config.return_immediately:
                async for _ in stream:
                    pass
            else:
                stream.close()
            return apply_history_length(paused.snapshot(), history_length)
        run, lane = await self._accept(principal, request, version)
        if config is not None and config.return_immediately:
            run.announce()
            snapshot = run.snapshot()
            self._start(run, lane, request)
            return apply_history_length(snapshot, config.history_length)
        stream = self._watch(run, at_interrupt=True)
        self._start(run, lane, request)
        async for _ in stream:
            pass
        if run.reply is not None:
            return run.reply
        return apply_history_length(run.snapshot(), history_length)

    async def stream(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> EventStream:
        """SendStreamingMessage: validation errors raise here, before any event exists."""
        approval = await self._approval_answer(principal, request.message)
        if approval is not None:
            paused, answer = approval
            stream = self._watch(paused, at_interrupt=True, snapshot=True)
            answer()
            return stream
        run, lane = await self._accept(principal, request, version)
        stream = self._watch(run, at_interrupt=True, snapshot=run.announced)
        self._start(run, lane, request)
        return stream

    async def subscribe(self, principal: str, task_id: str) -> EventStream:
        task = await self._load(principal, task_id)
        if task.status.state.terminal:
            raise UnsupportedOperationError(
                f"Task {task_id} is in terminal state: {task.status.state.value}"
            )
        run = self._live.get(task_id)
        if run is None:
            run = self._new_run(principal, task, announced=True)
            self._live[task_id] = run
        return self._watch(run, at_interrupt=False, snapshot=True)

    async def _approval_answer(
        self, principal: str, message: Message
    ) -> tuple[TaskRun, Callable[[], None]] | None:
        """When `message` answers the approval a paused turn waits on: resume the task (it is
        WORKING again, the answer in its history) and return it with the call that hands the
        answer to the agent (made once the caller watches, so no event is missed)."""
        run = self._live.get(message.task_id) if message.task_id else None
        if run is None or run.principal != principal:
            return None
        pending = run.pending_approval
        if pending is None:
            return None
        if message.context_id and message.context_id != run.task.context_id:
            raise InvalidParamsError(
                f"Context {message.context_id} does not match context {run.task.context_id} "
                f"of task {run.task.id}",
                violations=[("message.contextId", "does not match the task's context")],
            )
        answer = answer_of(message)
        await run.resume_after_input(message.model_copy(update={"context_id": run.task.context_id}))
        return run, lambda: pending.reply.answer(answer)

    def _new_run(self, principal: str, task: Task, *, announced: bool = False) -> TaskRun:
        """A run of a new task, or (`announced`) of a stored one."""
        return TaskRun(
            principal,
            task,
            self._store,
            announced=announced,
            first_turn=not announced,
            notify=self._push.notify if self._push is not None else None,
        )

    def _watch(self, run: TaskRun, *, at_interrupt: bool, snapshot: bool = False) -> EventStream:
        first = StreamResponse(task=run.snapshot()) if snapshot else None
        return EventStream(
            run.broker.subscribe(first),
            at_interrupt=at_interrupt,
            on_close=lambda: self._release(run),
        )

    def _release(self, run: TaskRun) -> None:
        """Forget a run nobody needs: no turn in flight and no one watching."""
        if (
            not run.running
            and not run.broker.has_subscribers
            and self._live.get(run.task.id) is run
        ):
            del self._live[run.task.id]

    async def _accept(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> tuple[TaskRun, Lane]:
        """Validate, take a place in the context's lane, then persist the SUBMITTED task (and
        the inline push config, before any event of the task exists).

        Everything between the checks and marking the run as running is synchronous, so two
        concurrent follow-ups cannot both continue one task; a full lane refuses the message
        before anything is stored.
        """
        if self._draining:
            raise UnsupportedOperationError("The daemon is shutting down; send this again later")
        message = request.message
        check_message(message, max_parts=self._max_parts, max_file_bytes=self._max_file_bytes)
        inline = (
            request.configuration.task_push_notification_config
            if request.configuration is not None
            else None
        )
        if inline is not None:
            field = "configuration." + (
                "taskPushNotificationConfig" if version == "1.0" else "pushNotificationConfig"
            )
            await self.push_configs.vet(inline, field)
        if message.task_id:
            task = await self._load(principal, message.task_id)
            run = self._continuable(principal, task, message)
            run.first_turn = False
            user = message.model_copy(update={"context_id": task.context_id})
        else:
            context_id = message.context_id or str(uuid.uuid4())
            task_id = str(uuid.uuid4())
            user = message.model_copy(update={"context_id": context_id, "task_id": task_id})
            task = Task(
                id=task_id,
                context_id=context_id,
                status=TaskStatus(state=TaskState.SUBMITTED, timestamp=utcnow()),
            )
            run = self._new_run(principal, task)
        lane = self._lanes.reserve(principal, run.task.context_id)
        try:
            self._slots.admit()
        except BaseException:
            self._lanes.leave(principal, run.task.context_id, lane)
            raise
        run.running = True
        run.finished = anyio.Event()
        self._live[run.task.id] = run
        previous = run.task.status.message
        run.task.history = [*(run.task.history or []), *([previous] if previous else []), user]
        run.task.status = TaskStatus(state=TaskState.SUBMITTED, timestamp=utcnow())
        try:
            await self._store.save(principal, run.task)
            if inline is not None and self._push is not None:
                task_id = run.task.id
                config = inline.model_copy(update={"task_id": task_id, "id": inline.id or task_id})
                await self._push.put(StoredConfig(principal, version, config))
        except BaseException:
            self._lanes.leave(principal, run.task.context_id, lane)
            self._slots.withdraw()
            run.running = False
            self._release(run)
            raise
        return run, lane

    def _continuable(self, principal: str, task: Task, message: Message) -> TaskRun:
        state = task.status.state
        if state.terminal:
            raise UnsupportedOperationError(f"Task {task.id} is in terminal state: {state.value}")
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                f"Context {message.context_id} does not match context {task.context_id} "
                f"of task {task.id}",
                violations=[("message.contextId", "does not match the task's context")],
            )
        run = self._live.get(task.id)
        if (run is not None and run.running) or not state.interrupted:
            raise UnsupportedOperationError(
                f"Task {task.id} is still running; wait until it needs input"
            )
        return run or self._new_run(principal, task, announced=True)

    def _start(self, run: TaskRun, lane: Lane, request: SendMessageRequest) -> None:
        if self._tg is None:
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
            metadata=dict(request.metadata or {}),
            approvals=self._approvals,
        )
        self._tg.start_soon(self._drive, run, turn, lane)

    async def _drive(self, run: TaskRun, turn: Turn, lane: Lane) -> None:
        """One turn, in the service's task group. Whatever goes wrong (the backend, even the
        store) ends this turn only, never the service."""
        waiting = True
        try:
            with anyio.CancelScope() as queued:
                run.queued_scope = queued
                async with self._lanes.turn(run.principal, run.task.context_id, lane):
                    if not run.task.status.state.terminal:
                        async with self._slots.turn(run.principal):
                            waiting = False
                            run.queued_scope = None
                            if not run.task.status.state.terminal:
                                await self._driver.run(run, turn)
        except Exception:  # noqa: BLE001 - fail_crashed logs it with its traceback
            await fail_crashed(run)
        finally:
            run.queued_scope = None
            if waiting:
                self._slots.withdraw()
            run.running = False
            run.finished.set()
            if run.task.status.state.terminal or run.reply is not None:
                run.broker.close()
            self._release(run)

    # ----- cancel ----------------------------------------------------------------------------

    async def cancel(self, principal: str, request: CancelTaskRequest) -> Task:
        """Cancel a task and return it once the agent has stopped (bounded by cancel_timeout)."""
        task = await self._load(principal, request.id)
        if task.status.state.terminal:
            raise TaskNotCancelableError(
                f"Task {request.id} is in terminal state: {task.status.state.value}"
            )
        run = self._live.get(request.id)
        if run is not None and run.running:
            if run.scope is not None:
                run.scope.cancel()
                with anyio.move_on_after(self._stop_bound):
                    await run.finished.wait()
            else:
                # Still queued: it never starts, and its place goes to the next one at once.
                await run.set_status(TaskState.CANCELED)
                if run.queued_scope is not None:
                    run.queued_scope.cancel()
            return run.snapshot()
        if run is None:
            run = self._new_run(principal, task, announced=True)
        await run.set_status(TaskState.CANCELED)
        self._live.pop(request.id, None)
        return run.snapshot()
