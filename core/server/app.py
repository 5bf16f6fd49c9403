"""The application factory. The app owns every resource through `cleanup_ctx`."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable
from datetime import timedelta

import anyio
import structlog
from aiohttp import web
from opentelemetry.sdk.trace import TracerProvider

from core import registry
from core.backend import Backend
from core.cluster import Cluster
from core.cluster_events import ClusterEvents
from core.cluster_turns import ClusterTurns, ReplicaTasks
from core.pg_db import PostgresDatabase
from core.server import jsonrpc, rest, rest_v03
from core.server.auth import Authenticator
from core.server.card import CardProvider
from core.server.keys import (
    CARD,
    CLUSTER,
    CLUSTER_EVENTS,
    CLUSTER_TURNS,
    GRPC,
    SERVICE,
    SETTINGS,
)
from core.server.push_sender import HttpPushSender
from core.server.rest_common import Endpoint, rest_not_found, uri_too_long
from core.server.storage import (
    Database,
    build_database,
    build_push_store,
    build_session_store,
    build_store,
)
from core.server.usage import (
    BUDGETS,
    budgets_lifecycle,
    build_budgets,
    build_observers,
    observed_paths,
)
from core.sessions.manager import Clock, SessionManager, system_clock
from core.sessions.store import SessionStore
from core.settings import Settings
from core.tasks.hooks import Hooks, load_hook
from core.tasks.push import PushDispatcher, PushSender, RetryPolicy
from core.tasks.push_store import PushStore
from core.tasks.remote import NO_REMOTE, RemoteTasks
from core.tasks.service import TaskService
from core.tasks.store import TaskStore
from core.tasks.turn_hooks import chain
from core.workspaces.hooks import WorkspaceHooks
from core.workspaces.manager import WorkspaceManager

log = structlog.get_logger(__name__)

WELL_KNOWN_CARD = "/.well-known/agent-card.json"
LEGACY_CARD = "/.well-known/agent.json"
# How long a turn sent to a replica that does not own its context waits for the owner.
FORWARD_WAIT = timedelta(seconds=30)
PUBLIC_PATHS = frozenset({WELL_KNOWN_CARD, LEGACY_CARD, "/health", "/ready", "/healthz"})


def build_push(
    settings: Settings,
    store: PushStore | None = None,
    sender: PushSender | None = None,
    db: Database = None,
    observe: Callable[[str], None] | None = None,
) -> PushDispatcher | None:
    """The push dispatcher when `push.enabled`, else None (push operations are refused)."""
    push = settings.push
    if not push.enabled:
        return None
    if store is None:
        store = build_push_store(db)
    policy = RetryPolicy(
        max_attempts=push.max_attempts,
        timeout=push.timeout / 1000,
        backoff=push.backoff / 1000,
        max_backoff=push.max_backoff / 1000,
    )
    return PushDispatcher(store, sender or HttpPushSender(push), policy, observe=observe)


def create_app(
    settings: Settings,
    *,
    backend: Backend | None = None,
    store: TaskStore | None = None,
    session_store: SessionStore | None = None,
    push_store: PushStore | None = None,
    push_sender: PushSender | None = None,
    clock: Clock = system_clock,
    tracer_provider: TracerProvider | None = None,
) -> web.Application:
    """Build the daemon's app. `backend` and the stores default to what the settings name;
    `push_sender` (tests) replaces the HTTP sender; `clock` (tests) is what session expiry
    reads; `tracer_provider` (tests) replaces the OTLP exporter of `tracing.enabled`."""
    auth = Authenticator(settings, PUBLIC_PATHS | observed_paths(settings))
    agent = backend or registry.create_backend(settings.backend, backend_config(settings))
    observers = build_observers(settings, agent, tracer_provider)
    app = web.Application(
        client_max_size=settings.server.max_body_bytes + 1,
        middlewares=[bind_request_id, auth.middleware, *observers.middlewares, rest_not_found],
    )
    app[SETTINGS] = settings
    app[CARD] = CardProvider(settings)
    storage, session = settings.storage, settings.session
    db = build_database(settings)
    budgets = app[BUDGETS] = build_budgets(settings, db)
    retention = timedelta(milliseconds=storage.retention) if storage.retention else None
    session_store = session_store or build_session_store(db)
    workspaces = WorkspaceManager(settings.workspace_config(), session_store)
    workspace_hooks = WorkspaceHooks(workspaces)
    if isinstance(db, PostgresDatabase) and clock is system_clock:
        # Replicas agree on what has expired only on one clock: the database's.
        clock = db.clock
    sessions = SessionManager(
        session_store,
        agent.name,
        agent.drop_session,
        reuse_by_context=session.reuse_by_context,
        ttl=timedelta(milliseconds=session.ttl) if session.ttl else None,
        # An expiry is reported for as long as the context's tasks are kept.
        tombstone_retention=retention,
        clock=clock,
        on_expired=workspaces.remove if workspaces.config.private else None,
        on_sweep=workspaces.retry_expired if workspaces.config.private else None,
    )
    tasks = store or build_store(db)
    push = build_push(settings, push_store, push_sender, db, observers.push_outcome)
    engine = settings.engine()
    remote: RemoteTasks = NO_REMOTE
    if isinstance(db, PostgresDatabase):
        # A cancel sent to another replica waits as long as one here would, and a margin.
        wait = timedelta(seconds=engine.timeouts.stop_bound + 2)
        events = app[CLUSTER_EVENTS] = ClusterEvents(db, settings.storage.url or "", wait)
        turns = app[CLUSTER_TURNS] = ClusterTurns(db, events, FORWARD_WAIT)
        remote = ReplicaTasks(events, turns)
    service = TaskService(
        tasks,
        agent,
        engine,
        sessions=sessions,
        hooks=build_hooks(settings),
        push=push,
        turn_hooks=chain(budgets, workspace_hooks),
        budget=budgets,
        message_check=workspace_hooks.refuse,
        observer=observers.turns,
        remote=remote,
    )
    app[SERVICE] = service
    if CLUSTER_EVENTS in app:
        app[CLUSTER_EVENTS].on_cancel = service.cancel_here
        app[CLUSTER_TURNS].on_turn = service.admit_here
    if isinstance(db, PostgresDatabase):
        heartbeat = timedelta(milliseconds=settings.cluster.heartbeat)
        app[CLUSTER] = Cluster(db, tasks, heartbeat, push, on_lease_lost=service.stop_turns)
    if settings.server.grpc_port is not None:
        from core.server.grpc.server import GrpcBinding  # noqa: PLC0415 - grpcio only when on

        app[GRPC] = GrpcBinding(settings, service, app[CARD])

    app.cleanup_ctx.append(budgets_lifecycle)
    app.cleanup_ctx.append(_service_lifecycle)
    app.on_shutdown.append(_drain)

    card = app[CARD].handle
    app.router.add_get(WELL_KNOWN_CARD, card)
    app.router.add_get(LEGACY_CARD, card)
    for path in ("/a2a/jsonrpc", "/a2a/jsonrpc/", "/"):
        app.router.add_post(path, jsonrpc.handle)
    # v0.3 first: otherwise `/v1/tasks/x` would match `/{tenant}/tasks/{id}` with tenant "v1".
    rest_v03.add_routes(app)
    rest.add_routes(app)
    app.router.add_get("/health", _alive)
    app.router.add_get("/ready", _ready)
    app.router.add_get("/healthz", _ready)
    observers.add_routes(app)
    return app


def build_hooks(settings: Settings) -> Hooks:
    """Import the configured policy hooks (a wrong reference fails at start, not mid-turn)."""
    config = settings.hooks
    return Hooks(
        before_turn=load_hook(config.before_turn) if config.before_turn else None,
        after_event=load_hook(config.after_event) if config.after_event else None,
        after_turn=load_hook(config.after_turn) if config.after_turn else None,
        timeout=config.timeout / 1000,
    )


def backend_config(settings: Settings) -> object:
    """What the backend factory takes: a built-in's validated block, else `options`."""
    return settings.backend_config()


async def _alive(request: web.Request) -> web.Response:
    """The process is up and serving HTTP (liveness)."""
    return web.json_response({"status": "ok"})


async def _ready(request: web.Request) -> web.Response:
    """200 when the store takes a write and the backend says it is healthy, else 503 with a
    `reason` code and a `message` written for the caller (readiness, for load balancers; no
    token needed, so never exception text). `/healthz` is the same check."""
    service = request.app[SERVICE]
    ready = await service.readiness()
    body = {"status": "ok" if ready.ok else "unavailable", "backend": service.backend_name}
    if ready.ok:
        if ready.detail:
            body["detail"] = ready.detail
        return web.json_response(body)
    body |= {"reason": ready.reason, "message": ready.message, "errorId": ready.error_id}
    return web.json_response(body, status=503)


MAX_LOGGED_PATH = 200  # characters of a path a log line shows (a caller picks its length)


@web.middleware
async def bind_request_id(request: web.Request, handler: Endpoint) -> web.StreamResponse:
    """Every log line of a request (and of the turns it starts) carries its request_id; one
    line per request says how it ended (never its body: no prompts, no tokens). A URI too
    long is answered 414 here, before anything else looks at the request."""
    started = time.perf_counter()
    status = 500
    with structlog.contextvars.bound_contextvars(request_id=os.urandom(6).hex()):
        try:
            response = uri_too_long(request) or await handler(request)
        except web.HTTPException as exc:
            status = exc.status
            raise
        else:
            status = response.status
            return response
        finally:
            log.info(
                "http.request",
                method=request.method,
                path=request.path[:MAX_LOGGED_PATH],
                status=status,
                ms=round((time.perf_counter() - started) * 1000, 1),
            )


async def _drain(app: web.Application) -> None:
    """aiohttp runs this after it stops accepting and before it waits for open requests; the
    gRPC server stops accepting at the same moment, and its running calls end with their
    turns."""
    grpc = app.get(GRPC)
    async with anyio.create_task_group() as tg:
        if grpc is not None:
            tg.start_soon(grpc.stop)
        await app[SERVICE].drain()


async def _service_lifecycle(app: web.Application) -> AsyncIterator[None]:
    """Run the task service, the gRPC server when configured and the replica's heartbeat
    (storage.kind "postgres"), in a task of its own.

    aiohttp may run startup and cleanup in different tasks; an anyio task group must be entered
    and left in one, so the service lives in a dedicated task and is stopped by an event. The
    gRPC server runs in the app's task group inside the service, so it stops first.
    """
    ready, stop = anyio.Event(), anyio.Event()
    failure: list[BaseException] = []

    async def serve() -> None:
        try:
            async with app[SERVICE].running(), anyio.create_task_group() as tg:
                grpc = app.get(GRPC)
                if grpc is not None:
                    await tg.start(grpc.serve)
                for part in (app.get(CLUSTER_EVENTS), app.get(CLUSTER_TURNS), app.get(CLUSTER)):
                    if part is not None:
                        await tg.start(part.serve)
                ready.set()
                await stop.wait()
                tg.cancel_scope.cancel()
        except Exception as exc:
            failure.append(exc)
            ready.set()
            raise

    task = asyncio.create_task(serve(), name="a2a-wrapper-service")
    await ready.wait()
    if failure:
        await asyncio.gather(task, return_exceptions=True)
        raise failure[0]
    try:
        yield
    finally:
        stop.set()
        await task
