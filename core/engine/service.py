"""The task service: every A2A task operation, in v1 terms, independent of binding and
dialect. It composes the engine's roles: reads (`queries.py`), admission (`admission.py`),
scheduling and stopping turns (`scheduling.py`) and the service's life (`lifecycle.py`),
each built from one frozen `EngineConfig`.

A blocking send returns once its turn settles (terminal or interrupted state, or a direct
reply); a dropped client never cancels work (turns run in the service's own task group, not
in the request).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import aclosing, asynccontextmanager

from core.backend import Backend
from core.backend.control import Capabilities, capabilities_of
from core.engine import readiness
from core.engine.admission import Admission
from core.engine.config import EngineConfig
from core.engine.control.forking import Forks
from core.engine.control.requested import Control, control_of
from core.engine.control.steering import Steering
from core.engine.lifecycle import Lifecycle
from core.engine.limits import TurnPlaces
from core.engine.queries import LiveRuns, TaskQueries
from core.engine.readiness import Readiness
from core.engine.remote import NO_REMOTE, EventSource, RemoteTasks
from core.engine.scheduling import Scheduler
from core.engine.streams import EventStream, apply_history_length
from core.engine.task_run import TaskRun
from core.engine.turn.driver import TurnDriver
from core.engine.turn.plugins import NO_PLUGINS, Plugins
from core.engine.turn.runner import TurnRunner
from core.push.configs import PushConfigs
from core.push.dispatcher import PushDispatcher
from core.sessions.manager import SessionManager
from core.storage.push import PushVersion
from core.storage.sessions import InMemorySessionStore
from core.storage.tasks import TaskStore
from core.wire.errors import (
    DaemonError,
    InternalError,
    TaskNotCancelableError,
    UnsupportedOperationError,
)
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
)


def _task_id(event: StreamResponse | None) -> str:
    if event is not None and event.status_update is not None:
        return event.status_update.task_id
    if event is not None and event.artifact_update is not None:
        return event.artifact_update.task_id
    if event is not None and event.task is not None:
        return event.task.id
    raise InternalError("A forwarded turn ended without an event")


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        backend: Backend,
        config: EngineConfig | None = None,
        *,
        sessions: SessionManager | None = None,
        plugins: Plugins = NO_PLUGINS,
        push: PushDispatcher | None = None,
        remote: RemoteTasks = NO_REMOTE,
    ) -> None:
        """`plugins`: what extends the engine (workspaces and budgets, the budget a turn
        reserves as it is admitted, the policy hooks, the turn observer); `remote`: the other
        replicas (their tasks can be watched and cancelled from here, and this one's events
        reach them)."""
        config = config or EngineConfig()
        self._turn_options = config.turn_options
        turn_hooks, observer = plugins.turn, plugins.observer
        timeouts, output, approvals = config.timeouts, config.output, config.approvals
        self._backend = backend
        self._store = store
        self._push = push
        self._sessions = sessions or SessionManager(
            InMemorySessionStore(), backend.name, backend.drop_session
        )
        self._remote = remote
        self._live = LiveRuns(store, push, None if remote is NO_REMOTE else remote.record)
        self._queries = TaskQueries(store, self._live)
        self.push_configs = PushConfigs(push, self._queries.load)
        runner = TurnRunner(
            backend,
            progress=output.progress,
            reasoning=output.reasoning,
            output_mode=output.mode,
            idle_timeout=timeouts.idle,
            approval_timeout=approvals.timeout,
            approval_on_timeout=approvals.on_timeout,
            close_timeout=timeouts.cancel,
            turn_hooks=turn_hooks,
            observer=observer,
        )
        self._credentials = runner.credentials
        driver = TurnDriver(
            backend,
            runner,
            self._sessions,
            hooks=plugins.hooks,
            turn_hooks=turn_hooks,
            turn_timeout=timeouts.turn,
            idle_timeout=timeouts.idle,
            cancel_timeout=timeouts.cancel,
            debug_errors=output.debug_errors,
        )
        places = TurnPlaces(config.limits)
        self._admission = Admission(
            config.limits,
            self._live,
            queries=self._queries,
            push=push,
            push_configs=self.push_configs,
            draining=lambda: self._lifecycle.draining,
            budget=plugins.budget,
            places=places,
            plugin=turn_hooks,
            forks=Forks(self._sessions, store, places.lanes, self.capabilities),
            capabilities=self.capabilities,
            defaults=config.turn_options.defaults,
        )
        self._steering = Steering(backend, self._live, self._queries, self.capabilities)
        self._scheduler = Scheduler(
            driver,
            places,
            self._live,
            timeouts,
            approvals.mode,
            budget=plugins.budget,
            observer=observer,
        )
        self._lifecycle = Lifecycle(
            config,
            store=store,
            backend=backend,
            sessions=self._sessions,
            push=push,
            scheduler=self._scheduler,
            live=self._live,
        )

    # ----- lifecycle -------------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[TaskService]:
        """Open the stores, reconcile, start the backend; on exit stop every turn, then close
        in reverse order."""
        async with self._lifecycle.running():
            yield self

    @property
    def draining(self) -> bool:
        """True once shutdown began: new messages are refused, running turns may finish."""
        return self._lifecycle.draining

    async def wait_draining(self) -> None:
        """Return once shutdown has begun."""
        await self._lifecycle.wait_draining()

    async def drain(self) -> None:
        await self._lifecycle.drain()

    async def sweep(self) -> int:
        """Delete terminal tasks older than the retention period; returns how many."""
        return await self._lifecycle.sweep()

    @property
    def push_enabled(self) -> bool:
        return self._push is not None

    @property
    def sessions(self) -> SessionManager:
        return self._sessions

    @property
    def sweeping_sessions(self) -> bool:
        """True while the background session sweep runs (ttl > 0 and cleanupInterval > 0)."""
        return self._lifecycle.sweeping_sessions

    async def readiness(self) -> Readiness:
        """Ready to work: the task store takes a write and the backend is healthy."""
        return await readiness.check(self._store, self._backend, self._credentials)

    @property
    def backend_name(self) -> str:
        return self._backend.name

    def capabilities(self) -> Capabilities:
        """What callers may use of the backend's declared capabilities (turnOptions applied)."""
        return self._turn_options.allowed(capabilities_of(self._backend))

    # ----- reads -----------------------------------------------------------------------------

    async def get(self, principal: str, request: GetTaskRequest) -> Task:
        return await self._queries.get(principal, request)

    async def list(self, principal: str, request: ListTasksRequest) -> ListTasksResponse:
        return await self._queries.list(principal, request)

    # ----- sends -----------------------------------------------------------------------------

    async def send(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> Task | Message:
        """SendMessage: blocking by default (returns once the turn settles), or at once with
        `returnImmediately`. `version` is the caller's protocol version, kept with an inline
        push config."""
        config = request.configuration
        history_length = config.history_length if config else None
        blocking = config is None or not config.return_immediately
        control = control_of(request)
        if control.delivery == "steer":
            run = await self._steering.target(principal, request.message)
            await self._steering.deliver(run, request.message)
            if blocking:
                await run.settled()
            return apply_history_length(run.task, history_length)
        approval = await self._approval(principal, request, control)
        if approval is not None:
            paused, answer = approval
            answer()
            if blocking:
                await paused.settled()
            return apply_history_length(paused.task, history_length)
        forwarded = await self._forwarded(principal, request, version)
        if forwarded is not None:
            return await self._answer_forwarded(principal, forwarded, blocking, history_length)
        run, lane, setup = await self._admission.admit(principal, request, version, control)
        await self._claim(principal, request, run)
        if not blocking:
            run.announce()
            snapshot = run.task
            self._scheduler.start(run, lane, request, setup)
            return apply_history_length(snapshot, history_length)
        self._scheduler.start(run, lane, request, setup)
        try:
            await run.settled()
        finally:
            self._live.release(run)
        if run.reply is not None:
            return run.reply
        return apply_history_length(run.task, history_length)

    async def stream(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> EventStream:
        """SendStreamingMessage: validation errors raise here, before any event exists."""
        control = control_of(request)
        if control.delivery == "steer":
            # Like any stream it starts with the Task; the steered update follows.
            run = await self._steering.target(principal, request.message)
            stream = self._watch(run, at_interrupt=True, snapshot=True)
            try:
                await self._steering.deliver(run, request.message)
            except BaseException:
                stream.close()
                raise
            return stream
        approval = await self._approval(principal, request, control)
        if approval is not None:
            paused, answer = approval
            stream = self._watch(paused, at_interrupt=True, snapshot=True)
            answer()
            return stream
        forwarded = await self._forwarded(principal, request, version)
        if forwarded is not None:
            return EventStream(forwarded, at_interrupt=True)
        run, lane, setup = await self._admission.admit(principal, request, version, control)
        await self._claim(principal, request, run)
        stream = self._watch(run, at_interrupt=True, snapshot=run.announced)
        self._scheduler.start(run, lane, request, setup)
        return stream

    async def _approval(
        self, principal: str, request: SendMessageRequest, control: Control
    ) -> tuple[TaskRun, Callable[[], None]] | None:
        """The paused turn `request` answers (never a message that asks for a delivery)."""
        if control.delivery is not None:
            return None
        return await self._admission.approval_answer(principal, request.message)

    # ----- replicas --------------------------------------------------------------------------

    async def _forwarded(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> EventSource | None:
        """The turn's events from the replica that owns its context, when that is another
        live one (it ran there); None: it runs here."""
        if self._remote is NO_REMOTE:
            return None
        message = request.message
        context_id = message.context_id
        if context_id is None and message.task_id:
            try:
                context_id = (await self._queries.load(principal, message.task_id)).context_id
            except DaemonError:
                return None  # admission says what is wrong with it
        if context_id is None:
            return None
        owner = await self._remote.owner_elsewhere(principal, context_id)
        if owner is None:
            return None
        return await self._remote.forward(owner, principal, request, version)

    async def _claim(self, principal: str, request: SendMessageRequest, run: TaskRun) -> None:
        """A new context's first turn runs here: this replica owns the context."""
        message = request.message
        if self._remote is not NO_REMOTE and message.context_id is None and not message.task_id:
            await self._remote.owner_elsewhere(principal, run.task.context_id)

    async def _answer_forwarded(
        self, principal: str, events: EventSource, blocking: bool, history_length: int | None
    ) -> Task | Message:
        last: StreamResponse | None = None
        async with aclosing(EventStream(events, at_interrupt=True).__aiter__()) as stream:
            async for event in stream:
                if not blocking and event.task is not None:
                    return apply_history_length(event.task, history_length)
                last = event
        if last is not None and last.message is not None:
            return last.message
        task_id = _task_id(last)
        return apply_history_length(await self._queries.load(principal, task_id), history_length)

    async def admit_here(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> str:
        """A turn another replica received for a context this one owns: admitted and started
        here as a non-blocking send; its events start with a Task snapshot."""
        run, lane, setup = await self._admission.admit(
            principal, request, version, control_of(request)
        )
        if run.announced:
            # A later turn of the task: a fresh snapshot opens this turn's events elsewhere.
            self._remote.record(principal, run.task.id, StreamResponse(task=run.task))
        else:
            run.announce()
        self._scheduler.start(run, lane, request, setup)
        return run.task.id

    async def subscribe(self, principal: str, task_id: str) -> EventStream:
        task = await self._queries.load(principal, task_id)
        if task.status.state.terminal:
            raise UnsupportedOperationError(
                f"Task {task_id} is in terminal state: {task.status.state.value}"
            )
        if self._live.get(principal, task_id) is None and await self._remote.running_elsewhere(
            principal, task_id
        ):
            return EventStream(self._remote.watch(principal, task_id), at_interrupt=False)
        run = self._live.of_stored(principal, task)
        self._live.hold(run)
        return self._watch(run, at_interrupt=False, snapshot=True)

    def _watch(self, run: TaskRun, *, at_interrupt: bool, snapshot: bool = False) -> EventStream:
        return EventStream(
            run.subscribe(snapshot=snapshot),
            at_interrupt=at_interrupt,
            on_close=lambda: self._live.release(run),
        )

    # ----- cancel ----------------------------------------------------------------------------

    async def cancel(self, principal: str, request: CancelTaskRequest) -> Task:
        """Cancel a task and return it once the agent has stopped (bounded by the cancel
        timeout)."""
        task = await self._queries.load(principal, request.id)
        if task.status.state.terminal:
            raise TaskNotCancelableError(
                f"Task {request.id} is in terminal state: {task.status.state.value}"
            )
        run = self._live.get(principal, request.id)
        if run is not None and run.in_flight:
            await self._scheduler.cancel(run)
            return run.task
        if run is None and await self._remote.running_elsewhere(principal, request.id):
            return await self._remote.cancel(principal, request.id)
        run = run or self._live.of_stored(principal, task)
        await run.cancel_idle()
        self._live.forget(request.id)
        return run.task

    async def stop_turns(self, reason: str) -> int:
        """Stop every turn running here, failing each with `reason` (a replica whose lease
        expired: its contexts may run elsewhere now); returns how many."""
        return await self._scheduler.stop_now(reason)

    async def cancel_here(self, principal: str, task_id: str) -> None:
        """A cancel another replica received for a task whose turn runs here (a no-op when
        it has no turn in flight here any more)."""
        run = self._live.get(principal, task_id)
        if run is not None and run.in_flight:
            await self._scheduler.cancel(run)
