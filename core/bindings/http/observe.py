"""The HTTP side of request observation (core/usage/observe.py): which requests are A2A
requests of which binding, and the middleware that watches them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.typedefs import Middleware

from core.usage.observe import RequestSink, observing

JSONRPC_PATHS = frozenset({"/a2a/jsonrpc", "/a2a/jsonrpc/", "/"})
# The REST bindings: v1.0 under /a2a/rest, v0.3 under /v1.
REST_PREFIXES = ("/a2a/rest/", "/v1/")
Endpoint = Callable[[web.Request], Awaitable[web.StreamResponse]]


def binding_of(request: web.Request) -> str | None:
    """The A2A binding a request uses, None for anything else (cards, health, metrics)."""
    path = request.path
    if request.method == "POST" and path in JSONRPC_PATHS:
        return "jsonrpc"
    if path.startswith(REST_PREFIXES):
        return "rest"
    return None


def observe_requests(sinks: tuple[RequestSink, ...]) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Endpoint) -> web.StreamResponse:
        binding = binding_of(request)
        if binding is None:
            return await handler(request)
        with observing(sinks, binding, request.headers):
            return await handler(request)

    return middleware
