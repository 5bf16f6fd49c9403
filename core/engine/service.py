"""The task service: every A2A task operation, in v1 terms, independent of binding and
dialect. It composes the engine's roles: reads (`queries.py`), admission (`admission.py`),
scheduling and stopping turns (`scheduling.py`) and the service's life (`lifecycle.py`),
each built from one frozen `EngineConfig`.

A blocking send returns once its turn settles (terminal or interrupted state, or a direct
reply); a dropped client never cancels work (turns run in the service's own task group, not
in the request).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from core.backend import Backend
from core.backend.control import Capabilities, declaration_of
from core.engine import readiness
from core.engine.admission import Admission, Admitted, Answer, NewTurn, Steer
from core.engine.config import EngineConfig
from core.engine.control.forking import Forks
from core.engine.control.requested import control_of
from core.engine.control.steering import Steering
from core.engine.lifecycle import Lifecycle
from core.engine.limits import TurnPlaces
from core.engine.queries import LiveRuns, TaskQueries
from core.engine.readiness import Readiness
from core.engine.scheduling import Scheduler
from core.engine.streams import EventStream, apply_history_length
from core.engine.task_run import TaskRun
from core.engine.turn.driver import TurnDriver
from core.engine.turn.plugins import NO_PLUGINS, Plugins
from core.engine.turn.runner import TurnRunner
from core.sessions.manager import SessionManager
from core.storage.contracts import PushVersion, TaskStore
from core.storage.memory import InMemorySessionStore
from core.wire.errors import (
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
    Task,
)


class TaskService:
    def __init__(
        self,
        store: TaskStore,
        backend: Backend,
        config: EngineConfig | None = None,
        *,
        sessions: SessionManager | None = None,
        plugins: Plugins = NO_PLUGINS,
    ) -> None:
        """`plugins`: what extends the engine (workspaces and budgets, the budget a turn
        reserves as it is admitted, the policy hooks, the turn observer, who else hears each
        event, push notifications). The engine knows only the turns that run here: what sits
        in front of it (core/cluster/router.py) sends a turn elsewhere."""
        config = config or EngineConfig()
        self._turn_options = config.turn_options
        turn_hooks, observer = plugins.turn, plugins.observer
        timeouts, output, approvals = config.timeouts, config.output, config.approvals
        self._backend = backend
        self._declared = declaration_of(backend)
        self._allowed: tuple[Capabilities, Capabilities] | None = None
        self._store = store
        push = plugins.push
        self._push = push
        self._sessions = sessions or SessionManager(
            InMemorySessionStore(), backend.name, backend.drop_session
        )
        self._live = LiveRuns(store, plugins.published, push.notify if push else None)
        self._queries = TaskQueries(store, self._live)
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
        """What callers may use of the backend's declared capabilities (turnOptions applied).
        Asked on every message: narrowed again only when the declaration changed."""
        declared = self._declared()
        last = self._allowed
        if last is None or (last[0] is not declared and last[0] != declared):
            last = self._allowed = (declared, self._turn_options.allowed(declared))
        return last[1]

    # ----- reads -----------------------------------------------------------------------------

    async def load(self, principal: str, task_id: str) -> Task:
        """The principal's task as it is now (TaskNotFoundError if there is none)."""
        return await self._queries.load(principal, task_id)

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
        admitted: Admitted | None = await self.answering(principal, request)
        if admitted is None:
            admitted = await self.admit(principal, request, version)
        return await self.reply(admitted, request)

    async def stream(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> EventStream:
        """SendStreamingMessage: validation errors raise here, before any event exists."""
        admitted: Admitted | None = await self.answering(principal, request)
        if admitted is None:
            admitted = await self.admit(principal, request, version)
        return await self.events(admitted, request)

    # A send in two steps, so that what sits in front of the engine (core/cluster/router.py)
    # can act between them: the message is taken (`answering`, else `admit`), then answered
    # (`reply`, `events`, or `start` for no one waiting).

    async def answering(self, principal: str, request: SendMessageRequest) -> Answer | Steer | None:
        """When the message is for a turn in flight here: with `delivery: "steer"`, the
        running turn it goes into (refused when there is none it can steer); without a
        delivery, the turn paused here on the approval it answers, resumed (its task WORKING
        again); else None (a new turn: `admit`)."""
        control = control_of(request)
        message = request.message
        if control.delivery == "steer":
            return Steer(await self._steering.target(principal, message), message)
        if control.delivery is not None:
            return None  # a message that asks for a delivery never answers an approval
        approval = await self._admission.approval_answer(principal, message)
        return None if approval is None else Answer(*approval)

    async def admit(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> NewTurn:
        """A new turn of the message's task (or, with `delivery: "queue"`, of a new task
        behind its context's running turn): validated with its conversation control, stored
        SUBMITTED, holding its place in the context's lane and a turn slot; not started yet."""
        control = control_of(request)
        return NewTurn(*await self._admission.admit(principal, request, version, control))

    async def reply(self, admitted: Admitted, request: SendMessageRequest) -> Task | Message:
        """What SendMessage returns for `admitted`: once its turn settles (blocking, the
        default), or the task at once (`returnImmediately`)."""
        config = request.configuration
        history_length = config.history_length if config else None
        blocking = config is None or not config.return_immediately
        run = admitted.run
        if not isinstance(admitted, NewTurn):
            await self._hand_over(admitted)
            if blocking:
                await run.settled()
            return apply_history_length(run.task, history_length)
        if not blocking:
            run.announce()
            snapshot = run.task
            self._scheduler.start(run, admitted.lane, request, admitted.setup)
            return apply_history_length(snapshot, history_length)
        self._scheduler.start(run, admitted.lane, request, admitted.setup)
        try:
            await run.settled()
        finally:
            self._live.release(run)
        if run.reply is not None:
            return run.reply
        return apply_history_length(run.task, history_length)

    async def events(self, admitted: Admitted, request: SendMessageRequest) -> EventStream:
        """The events of `admitted`'s turn as SendStreamingMessage streams them (a steer's
        and an answer's too start with the Task; the steered update follows)."""
        run = admitted.run
        if isinstance(admitted, NewTurn):
            stream = self._watch(run, at_interrupt=True, snapshot=run.announced)
            self._scheduler.start(run, admitted.lane, request, admitted.setup)
            return stream
        stream = self._watch(run, at_interrupt=True, snapshot=True)
        try:
            await self._hand_over(admitted)
        except BaseException:
            stream.close()
            raise
        return stream

    async def start(self, admitted: Admitted, request: SendMessageRequest) -> None:
        """Start `admitted` with no one waiting on it here (a non-blocking send whose caller
        is elsewhere): a new turn's task is announced first; an answer or a steered message
        is handed to the agent (a refused steer raises)."""
        if isinstance(admitted, NewTurn):
            admitted.run.announce()
            self._scheduler.start(admitted.run, admitted.lane, request, admitted.setup)
        else:
            await self._hand_over(admitted)

    async def _hand_over(self, admitted: Answer | Steer) -> None:
        """The message to the agent's turn in flight: an approval's answer, or a steer."""
        if isinstance(admitted, Answer):
            admitted.give()
        else:
            await self._steering.deliver(admitted.run, admitted.message)

    def holds(self, principal: str, task_id: str) -> bool:
        """A run of the principal's task is live here (a turn in flight, or watched)."""
        return self._live.get(principal, task_id) is not None

    async def subscribe(self, principal: str, task_id: str) -> EventStream:
        task = await self._queries.load(principal, task_id)
        if task.status.state.terminal:
            raise UnsupportedOperationError(
                f"Task {task_id} is in terminal state: {task.status.state.value}"
            )
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
        run = run or self._live.of_stored(principal, task)
        await run.cancel_idle()
        self._live.forget(request.id)
        return run.task

    async def cancel_turn(self, principal: str, task_id: str) -> None:
        """Cancel the turn of the task in flight here, if there is one (a no-op otherwise)."""
        run = self._live.get(principal, task_id)
        if run is not None and run.in_flight:
            await self._scheduler.cancel(run)

    async def stop_turns(self, reason: str) -> int:
        """Stop every turn running here, failing each with `reason` (e.g. a replica whose
        lease expired: its contexts may run elsewhere now); returns how many."""
        return await self._scheduler.stop_now(reason)
