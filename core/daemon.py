"""The composition root: the daemon's parts built from the settings, started in order and
stopped in reverse.

Start: storage -> budgets -> backend and engine -> cluster -> bindings, each started (with
`tg.start` where it serves) once the one before it is ready. Stop: the bindings stop
accepting while the engine drains its turns, then the cluster, the engine and the backend,
the budgets and the storage close, in that order. The HTTP app and the gRPC server are
bindings of the daemon (`core.api.host`), neither owning the other.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import signal
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from datetime import timedelta
from functools import partial
from typing import Any, Protocol

import anyio
import structlog
from anyio.abc import TaskStatus
from opentelemetry.sdk.trace import TracerProvider

from core import registry
from core.api.card import CardProvider
from core.api.host import Binding
from core.api.operations import Front, Operations
from core.backend import Backend
from core.bindings.http import serve as http
from core.bindings.http.app import HttpApp, hosted_app
from core.bindings.http.push_sender import HttpPushSender
from core.cluster.events import ClusterEvents
from core.cluster.lease import Cluster
from core.cluster.router import ClusterRouter, publishing
from core.cluster.turns import ClusterTurns, ReplicaTasks
from core.engine.observer import NO_OBSERVER, Observers, TurnObserver
from core.engine.policy import Hooks, load_hook
from core.engine.service import TaskService
from core.engine.startup import StorageStartError, failing_as
from core.engine.turn.plugins import Plugins, chain
from core.instance.guard import guarded
from core.instance.records import SCHEMA as INSTANCE_SCHEMA
from core.push.configs import PushConfigs
from core.push.dispatcher import PushDispatcher, PushSender, RetryPolicy
from core.push.plugin import EnginePush
from core.sessions.manager import Clock, SessionManager, system_clock
from core.settings import Settings
from core.settings.jails import sandboxed
from core.settings.sections import engine_config, storage_config, workspace_config
from core.settings.usage import budget_config
from core.storage.contracts import PushStore, SessionStore, TaskStore
from core.storage.kinds import storage_for
from core.storage.sqlite.database import ForeignStorageError
from core.usage.budgets import Budgets
from core.usage.metrics import Metrics
from core.usage.observe import RequestSink
from core.usage.observers import AppObservers
from core.usage.tracing import Tracing, default_provider
from core.workspaces.manager import WorkspaceManager
from core.workspaces.plugin import WorkspaceHooks
from core.workspaces.queries import WorkspaceQueries

log = structlog.get_logger(__name__)

# How long a turn sent to a replica that does not own its context waits for the owner.
FORWARD_WAIT = timedelta(seconds=30)
FORCED_EXIT = 130


class _Serving(Protocol):
    async def serve(self, *, task_status: TaskStatus[None] = ...) -> None: ...


class Daemon:
    """Every part of one daemon. `backend` and the stores default to what the settings name;
    `push_sender` (tests) replaces the HTTP sender; `clock` (tests) is what session expiry
    reads; `tracer_provider` (tests) replaces the OTLP exporter of `tracing.enabled`."""

    def __init__(
        self,
        settings: Settings,
        *,
        backend: Backend | None = None,
        store: TaskStore | None = None,
        session_store: SessionStore | None = None,
        push_store: PushStore | None = None,
        push_sender: PushSender | None = None,
        clock: Clock = system_clock,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        self.settings = settings
        agent = backend or sandboxed(
            settings,
            registry.create_backend(settings.backend, settings.backend_config()),
            partial(registry.create_backend, settings.backend),
        )
        self.observers = build_observers(settings, agent, tracer_provider)
        self.storage = storage_for(storage_config(settings))
        self.budgets = Budgets(budget_config(settings.budget), self.storage.usage)
        session_store = session_store or self.storage.sessions
        workspaces = WorkspaceManager(workspace_config(settings), self.storage.workspaces)
        workspace_hooks = WorkspaceHooks(workspaces)
        db = self.storage.replicas
        if db is not None and clock is system_clock:
            # Replicas agree on what has expired only on one clock: the database's.
            clock = db.clock
        retention = settings.storage.retention
        sessions = SessionManager(
            session_store,
            agent.name,
            agent.drop_session,
            reuse_by_context=settings.session.reuse_by_context,
            ttl=timedelta(milliseconds=settings.session.ttl) if settings.session.ttl else None,
            # An expiry is reported for as long as the context's tasks are kept.
            tombstone_retention=timedelta(milliseconds=retention) if retention else None,
            clock=clock,
            on_expired=workspaces.remove if workspaces.config.private else None,
            on_sweep=workspaces.retry_expired if workspaces.config.private else None,
        )
        tasks = store or self.storage.tasks
        push = build_push(
            settings, push_store or self.storage.push, push_sender, self.observers.push_outcome
        )
        engine = engine_config(settings)
        self.cluster: list[_Serving] = []
        replicas: ReplicaTasks | None = None
        if db is not None:
            # A cancel sent to another replica waits as long as one here would, and a margin.
            wait = timedelta(seconds=engine.timeouts.stop_bound + 2)
            events = ClusterEvents(db, settings.storage.url or "", wait)
            turns = ClusterTurns(db, events, FORWARD_WAIT)
            replicas = ReplicaTasks(events, turns)
            self.cluster = [events, turns]
        self.service = TaskService(
            tasks,
            agent,
            engine,
            sessions=sessions,
            plugins=Plugins(
                turn=chain(self.budgets, workspace_hooks),
                hooks=build_hooks(settings),
                observer=self.observers.turns,
                budget=self.budgets,
                published=publishing(replicas) if replicas is not None else None,
                push=EnginePush(push) if push is not None else None,
            ),
        )
        # The engine knows only the turns that run here; with replicas a router in front of
        # it sends each request where its task runs. Without, the bindings reach the engine.
        self.front: Front = self.service
        if db is not None and replicas is not None:
            router = ClusterRouter(self.service, replicas)
            self.front = router
            events.on_cancel = router.cancel_here
            turns.on_turn = router.admit_here
            heartbeat = timedelta(milliseconds=settings.cluster.heartbeat)
            lease = Cluster(db, tasks, heartbeat, push, on_lease_lost=self.service.stop_turns)
            self.cluster.append(lease)
        self.ops = Operations(
            self.service,
            front=self.front,
            push_configs=PushConfigs(push, self.service.load),
            budgets=self.budgets,
            workspaces=WorkspaceQueries(workspaces, self.storage.workspaces),
        )
        # The card says what callers may use of the backend as it is when the card is served.
        self.card = CardProvider(settings, self.ops.capabilities)
        self._stopping: anyio.Event | None = None
        self._stop_asked = False

    # ----- start and stop ---------------------------------------------------------------------

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """Storage -> budgets -> backend and engine -> cluster; on exit the same in reverse
        (an exit stack unwinds last in, first out)."""
        async with AsyncExitStack() as stack:
            with failing_as(StorageStartError):
                await self.storage.open()
            stack.push_async_callback(self._stopped, "storage", self.storage.close)
            _started("storage")
            # The budgets' totals are read from the store before the first message is admitted.
            with failing_as(StorageStartError):
                await self.budgets.open()
            stack.push_async_callback(self._stopped, "budgets", self.budgets.close)
            _started("budgets")
            stack.push_async_callback(self._stopped, "engine", None)
            await stack.enter_async_context(self.service.running())
            _started("engine")
            stack.push_async_callback(self._stopped, "cluster", None)
            tg = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(tg.cancel_scope.cancel)
            for part in self.cluster:
                await tg.start(part.serve)
            _started("cluster")
            yield

    async def serve(
        self,
        bindings: Sequence[Binding],
        *,
        task_status: TaskStatus[list[str]] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Run until `stop()`: the parts, then each binding (`tg.start`); reports the URLs
        the bindings listen on. On stop the bindings stop accepting while the engine drains
        its turns; the parts close once every binding has returned."""
        self._stopping = anyio.Event()
        if self._stop_asked:
            self._stopping.set()
        async with self.running():
            urls: list[str] = []
            async with anyio.create_task_group() as tg:
                for binding in bindings:
                    urls.extend(await tg.start(binding, self))
                _started("bindings")
                task_status.started(urls)
                await self._stopping.wait()
                await self.service.drain()
            log.info("daemon.stopped", part="bindings")

    async def wait_stopping(self) -> None:
        if self._stopping is None:
            raise RuntimeError("the daemon is not serving")
        await self._stopping.wait()

    def request_stop(self) -> None:
        self._stop_asked = True
        if self._stopping is not None:
            self._stopping.set()

    async def stop(self) -> None:
        """Ask the daemon to stop and wait until every turn is drained (idempotent)."""
        self.request_stop()
        await self.service.drain()

    @staticmethod
    async def _stopped(part: str, close: Callable[[], Any] | None) -> None:
        if close is not None:
            await close()
        log.info("daemon.stopped", part=part)


def _started(part: str) -> None:
    log.info("daemon.started", part=part)


def bindings_for(settings: Settings) -> list[Binding]:
    """The ways in the settings turn on: gRPC on `server.grpcPort` (started first, so the
    card the HTTP binding serves names its port), HTTP always."""
    found: list[Binding] = []
    if settings.server.grpc_port is not None:
        from core.bindings.grpc import server as grpc  # noqa: PLC0415 - grpcio only when on

        found.append(grpc.serve)
    found.append(http.serve)
    return found


def create_app(settings: Settings, **parts: Any) -> HttpApp:
    """The daemon hosted in its HTTP app (tests, the benchmarks): the app's startup runs the
    daemon with its other bindings, its shutdown stops it. `parts` are Daemon's overrides."""
    daemon = Daemon(settings, **parts)
    return hosted_app(daemon, [b for b in bindings_for(settings) if b is not http.serve])


def build_observers(
    settings: Settings, backend: Backend, tracer_provider: TracerProvider | None = None
) -> AppObservers:
    """Metrics (`metrics.enabled`) and traces (`tracing.enabled`; `tracer_provider` replaces
    the OTLP one, for tests)."""
    sinks: list[RequestSink] = []
    turns: list[TurnObserver] = []
    metrics = None
    if settings.metrics.enabled:
        metrics = Metrics(backend.name, _version())
        warm = getattr(backend, "warm_sessions", None)
        if callable(warm):
            metrics.warm.set_function(lambda: float(warm()))
        sinks.append(metrics)
        turns.append(metrics)
    tracing = None
    if settings.tracing.enabled:
        model = getattr(settings.backend_block(), "model", None)
        tracing = Tracing(
            tracer_provider or default_provider(),
            agent=settings.agent_card.name,
            backend=backend.name,
            model=model if isinstance(model, str) else None,
            model_provider=getattr(backend, "model_provider", None),
        )
        sinks.append(tracing)
        turns.append(tracing)
    observer: TurnObserver = NO_OBSERVER
    if len(turns) == 1:
        observer = turns[0]
    elif turns:
        observer = Observers(turns)
    return AppObservers(metrics, tracing, tracer_provider is None, tuple(sinks), observer)


def _version() -> str:
    try:
        return importlib.metadata.version("a2a-wrapper")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def build_push(
    settings: Settings,
    store: PushStore,
    sender: PushSender | None = None,
    observe: Callable[[str], None] | None = None,
) -> PushDispatcher | None:
    """The push dispatcher when `push.enabled`, else None (push operations are refused)."""
    push = settings.push
    if not push.enabled:
        return None
    policy = RetryPolicy(
        max_attempts=push.max_attempts,
        timeout=push.timeout / 1000,
        backoff=push.backoff / 1000,
        max_backoff=push.max_backoff / 1000,
    )
    return PushDispatcher(store, sender or HttpPushSender(push), policy, observe=observe)


def build_hooks(settings: Settings) -> Hooks:
    """Import the configured policy hooks (a wrong reference fails at start, not mid-turn)."""
    config = settings.hooks
    return Hooks(
        before_turn=load_hook(config.before_turn) if config.before_turn else None,
        after_event=load_hook(config.after_event) if config.after_event else None,
        after_turn=load_hook(config.after_turn) if config.after_turn else None,
        timeout=config.timeout / 1000,
    )


# ----- the CLI's `serve` ---------------------------------------------------------------------


def check_storage(settings: Settings) -> None:
    """Before anything is written: a SQLite storage file that exists must be this daemon's
    (StorageStartError, one line, otherwise). The tables it may hold are those of every store
    and of the instance records."""
    try:
        storage_for(storage_config(settings)).check_ours(INSTANCE_SCHEMA)
    except ForeignStorageError as exc:
        raise StorageStartError(str(exc)) from exc


async def serve(settings: Settings, on_listening: Callable[[str], None]) -> None:
    """Serve until SIGINT/SIGTERM: stop accepting, let running turns finish up to
    `server.shutdownTimeout`, then stop them and the agents. A second signal exits at once,
    killing every agent process first. The whole run holds the storage lock
    (StorageInUseError when another daemon has it) and its process hygiene
    (`core.instance.guard`). A storage file that is not this daemon's is refused before
    anything is written (StorageStartError)."""
    check_storage(settings)
    async with guarded(settings.storage.local_path()) as guard:
        daemon = Daemon(settings)
        loop = asyncio.get_running_loop()

        def on_signal() -> None:
            if daemon._stop_asked:
                log.warning("daemon.forced_exit")
                guard.force_stop()
                os._exit(FORCED_EXIT)
            log.info("daemon.stopping")
            daemon.request_stop()

        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, on_signal)
        with unwrapped():
            async with anyio.create_task_group() as tg:
                urls = await tg.start(daemon.serve, bindings_for(settings))
                # The HTTP URL first: what a caller (and a supervisor reading it) wants.
                for url in sorted(urls, key=lambda u: not u.startswith("http")):
                    on_listening(url)


@contextmanager
def unwrapped() -> Iterator[None]:
    """A failure of one part surfaces as itself (a StartupError is one line and an exit code
    to the CLI), not as the task groups' ExceptionGroup around it."""
    try:
        yield
    except BaseExceptionGroup as group:
        leaf: BaseException = group
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        if leaf is group:
            raise
        raise leaf  # noqa: B904 - the group is its context
