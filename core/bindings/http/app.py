"""The HTTP app of a daemon (`core.api.host.Host`): JSON-RPC, HTTP+JSON and the card over
one aiohttp application, its middlewares (request id, auth, metrics and traces) and the
health routes. `serve.py` runs it as the daemon's HTTP binding; `hosted_app` makes it the
daemon's host instead (tests and benchmarks drive it with aiohttp's test client)."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Sequence
from functools import partial
from typing import Any

import anyio
import structlog
from aiohttp import web
from aiohttp.typedefs import Middleware
from anyio.abc import TaskStatus

from core.api.host import Binding, Host
from core.bindings.http import jsonrpc, rest
from core.bindings.http.auth import Authenticator
from core.bindings.http.card import card_route
from core.bindings.http.console import CONSOLE, add_console, console_enabled
from core.bindings.http.keys import CARD, OPERATIONS, SERVICE, SETTINGS
from core.bindings.http.mcp import add_mcp
from core.bindings.http.metrics import metrics_route, observed_paths
from core.bindings.http.observe import observe_requests
from core.bindings.http.rest_common import Endpoint, rest_not_found, uri_too_long
from core.usage.metrics import METRICS_PATH
from core.usage.observers import AppObservers

log = structlog.get_logger(__name__)

WELL_KNOWN_CARD = "/.well-known/agent-card.json"
LEGACY_CARD = "/.well-known/agent.json"
PUBLIC_PATHS = frozenset({WELL_KNOWN_CARD, LEGACY_CARD, "/health", "/ready", "/healthz"})

HttpApp = web.Application


def http_app(host: Host) -> web.Application:
    """The routes and middlewares of `host`'s HTTP binding; the app owns none of the daemon's
    parts (the daemon runs them)."""
    settings = host.settings
    console = console_enabled(settings)
    auth = Authenticator(
        settings, PUBLIC_PATHS | observed_paths(settings), CONSOLE if console else None
    )
    observers = host.observers
    app = web.Application(
        client_max_size=settings.server.max_body_bytes + 1,
        middlewares=[bind_request_id, auth.middleware, *_observing(observers), rest_not_found],
    )
    app[SETTINGS] = settings
    app[CARD] = host.card
    app[SERVICE] = host.service
    app[OPERATIONS] = host.ops
    card = card_route(host.card)
    app.router.add_get(WELL_KNOWN_CARD, card)
    app.router.add_get(LEGACY_CARD, card)
    for path in ("/a2a/jsonrpc", "/a2a/jsonrpc/", "/"):
        app.router.add_post(path, jsonrpc.handle)
    if console:
        # Before the REST routes: `/console/tasks/x` would match `/{tenant}/tasks/{id}`.
        add_console(app, host)
    if settings.mcp.enabled:
        add_mcp(app, host)
    rest.add_routes(app)
    app.router.add_get("/health", _alive)
    app.router.add_get("/ready", _ready)
    app.router.add_get("/healthz", _ready)
    if observers.metrics is not None:
        app.router.add_get(METRICS_PATH, metrics_route(observers.metrics, settings))
    if observers.tracing is not None and observers.owns_provider:
        app.on_cleanup.append(partial(_flush, observers))
    return app


def _observing(observers: AppObservers) -> list[Middleware]:
    return [observe_requests(observers.sinks)] if observers.sinks else []


async def _flush(observers: AppObservers, app: web.Application) -> None:
    observers.flush()


def hosted_app(host: Host, bindings: Sequence[Binding]) -> web.Application:
    """`host`'s HTTP app as the daemon's host: the app's startup runs the daemon (with
    `bindings`, its other ways in), its shutdown stops it. aiohttp stops accepting, then runs
    on_shutdown (the daemon drains its turns; the other bindings stop accepting), then waits
    for the open requests, then cleanup (the daemon's parts close)."""
    app = http_app(host)
    app.cleanup_ctx.append(partial(_hosting, host, bindings))
    app.on_shutdown.append(partial(_stop, host))
    return app


async def _stop(host: Host, app: web.Application) -> None:
    await host.stop()


class _Started:
    """The TaskStatus the daemon reports its start through, read by the app's startup."""

    def __init__(self) -> None:
        self.future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def started(self, value: Any = None) -> None:
        self.future.set_result(None)


async def _hosting(
    host: Host, bindings: Sequence[Binding], app: web.Application
) -> AsyncIterator[None]:
    """Run the daemon in a task of its own until the app's cleanup.

    aiohttp may run startup and cleanup in different tasks; an anyio task group must be
    entered and left in one, so the daemon lives in a dedicated task. The app itself is the
    daemon's last binding: it holds the daemon up until the cleanup."""
    cleanup = anyio.Event()

    async def site(host: Host, *, task_status: TaskStatus[list[str]]) -> None:
        task_status.started([])
        await cleanup.wait()

    status = _Started()
    task = asyncio.create_task(
        host.serve([*bindings, site], task_status=status), name="a2a-wrapper-daemon"
    )
    done, _ = await asyncio.wait({status.future, task}, return_when=asyncio.FIRST_COMPLETED)
    if task in done and not status.future.done():
        task.result()  # the start failed: its error, as the daemon raised it
    try:
        yield
    finally:
        await host.stop()
        cleanup.set()
        await task


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
    # bind/reset rather than `bound_contextvars`: the same, without a generator-based context
    # manager per request.
    tokens = structlog.contextvars.bind_contextvars(request_id=os.urandom(6).hex())
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
        structlog.contextvars.reset_contextvars(**tokens)
