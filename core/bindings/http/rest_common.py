"""Plumbing shared by both REST dialects: version and extension checks, bodies, errors, SSE.

Every REST response is `application/json` (errors are `google.rpc.Status`, v1.0 §11.6) except
streams, which are `text/event-stream`.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from core.api.calls import Call
from core.api.errors import as_daemon_error
from core.bindings.http.body import read_json_body
from core.bindings.http.calls import call_for
from core.bindings.http.keys import CARD, SETTINGS
from core.bindings.http.negotiation import check_extensions, request_version
from core.bindings.http.sse import frame, stream_events
from core.usage import observe
from core.wire import strict_json
from core.wire.errors import (
    DaemonError,
    InvalidParamsError,
    MethodNotAllowedError,
    MethodNotFoundError,
    UriTooLongError,
    protocol_name,
    rest_error,
)
from core.wire.versions import Version, require

REST_PREFIX = "/a2a/rest"
# The A2A method each REST operation is (metrics and traces name requests by it).
REST_METHODS = {
    "send": "SendMessage",
    "stream": "SendStreamingMessage",
    "get_task": "GetTask",
    "list_tasks": "ListTasks",
    "cancel": "CancelTask",
    "subscribe": "SubscribeToTask",
    "create_push_config": "CreateTaskPushNotificationConfig",
    "list_push_configs": "ListTaskPushNotificationConfigs",
    "get_push_config": "GetTaskPushNotificationConfig",
    "delete_push_config": "DeleteTaskPushNotificationConfig",
    "extended_card": "GetExtendedAgentCard",
    "card": "GetExtendedAgentCard",
}
Events = AsyncIterator[dict[str, Any]]
RestResult = dict[str, Any] | list[Any] | Events
RestHandler = Callable[[web.Request, Call], Awaitable[RestResult]]
Endpoint = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error_response(error: DaemonError, *, legacy: bool = False) -> web.Response:
    """`google.rpc.Status` with the §5.4 HTTP status. v0.3 callers also get the error's type
    name at the top level, which is what the reference v0.3 REST client maps to exceptions."""
    status, body = rest_error(error)
    if legacy:
        body = {**body, "type": protocol_name(error), "message": error.message}
    return web.json_response(body, status=status, dumps=strict_json.dumps)


async def json_body(request: web.Request) -> dict[str, Any]:
    """The request body as a JSON object; an empty body is `{}`."""
    raw = await read_json_body(request)
    if not raw.strip():
        return {}
    body = strict_json.loads(raw)
    if not isinstance(body, dict):
        raise InvalidParamsError("The request body must be a JSON object")
    return body


def query_int(request: web.Request, name: str) -> int | None:
    value = request.query.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError as exc:
        raise InvalidParamsError(
            f"{name} must be an integer", violations=[(name, "must be an integer")]
        ) from exc


def push_config_routes(
    task: str, create: RestHandler, list_: RestHandler, get: RestHandler, delete: RestHandler
) -> list[tuple[str, str, RestHandler]]:
    """The push-config routes of a task path. While push is off every one of them answers
    PushNotificationNotSupported, before looking at the request."""
    configs = f"/tasks/{task}/pushNotificationConfigs"
    return [
        ("POST", configs, _push_gate(create)),
        ("GET", configs, _push_gate(list_)),
        ("GET", configs + "/{config_id}", _push_gate(get)),
        ("DELETE", configs + "/{config_id}", _push_gate(delete)),
    ]


def _push_gate(handler: RestHandler) -> RestHandler:
    @functools.wraps(handler)
    async def gated(request: web.Request, call: Call) -> RestResult:
        call.ops.require_push()
        return await handler(request, call)

    return gated


def route(handler: RestHandler, *, version: Version, legacy: bool = False) -> Endpoint:
    """Wrap a REST operation: negotiate, call, render the result or the error."""
    name = REST_METHODS.get(handler.__name__, handler.__name__)
    dialect = "0.3" if legacy else "1.0"

    async def endpoint(request: web.Request) -> web.StreamResponse:
        settings = request.app[SETTINGS]
        debug = settings.server.debug_errors
        observe.method(name, dialect, request.match_info.get("id"))
        try:
            require(request_version(request), version)
            check_extensions(request, request.app[CARD].required_extensions)
            result = await handler(request, call_for(request, {}))
        except Exception as exc:  # noqa: BLE001 - every failure becomes a Status body
            error = as_daemon_error(exc, debug=debug)
            observe.failed(error)
            return error_response(error, legacy=legacy)
        if isinstance(result, dict | list):
            return web.json_response(result, dumps=strict_json.dumps)
        return await stream_events(
            request,
            _frames(result, debug=debug),
            ping_interval=settings.server.sse_ping_interval / 1000,
        )

    return endpoint


async def _frames(events: Events, *, debug: bool) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            yield frame(event)
    except Exception as exc:  # noqa: BLE001 - after the first byte an error is one final event
        error = as_daemon_error(exc, debug=debug)
        observe.failed(error)
        yield frame(rest_error(error)[1], event="error")


# aiohttp reads a request line up to MAX_REQUEST_LINE bytes (its default, 8190, would cut a
# longer one off with a bare 400 and close the connection on bytes still in flight, which the
# client sees as a reset); a request target over MAX_URI bytes is answered 414 here instead.
MAX_REQUEST_LINE = 2 * 1024 * 1024
MAX_URI = 8190


def uri_too_long(request: web.Request) -> web.Response | None:
    """414 in the REST error form for a request whose URI is over MAX_URI bytes, else None
    (called by the first middleware, so it costs no middleware of its own)."""
    if len(request.raw_path) <= MAX_URI:
        return None
    return error_response(UriTooLongError(f"The request's URI is longer than {MAX_URI} bytes"))


@web.middleware
async def rest_not_found(request: web.Request, handler: Endpoint) -> web.StreamResponse:
    """Unknown paths and wrong verbs under the REST prefix get a Status body, not HTML/text."""
    try:
        return await handler(request)
    except web.HTTPNotFound:
        if not request.path.startswith(REST_PREFIX):
            raise
        error = MethodNotFoundError(f"No REST route {request.path}")
        observe.method(observe.OTHER, "1.0")
        observe.failed(error)
        return error_response(error)
    except web.HTTPMethodNotAllowed as exc:
        if not request.path.startswith(REST_PREFIX):
            raise
        response = error_response(
            MethodNotAllowedError(f"{request.method} is not allowed on {request.path}")
        )
        response.headers["Allow"] = ",".join(sorted(exc.allowed_methods))
        return response
