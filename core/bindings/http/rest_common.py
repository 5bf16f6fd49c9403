"""REST plumbing: bodies, query numbers, error responses, SSE frames, 404/405 and 414.

Every REST response is `application/json` (errors are `google.rpc.Status`, v1.0 §11.6) except
streams, which are `text/event-stream`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from aiohttp import web

from core.api.errors import as_daemon_error
from core.bindings.http.body import read_json_body
from core.bindings.http.sse import frame
from core.usage import observe
from core.wire import strict_json
from core.wire.errors import (
    InvalidParamsError,
    MethodNotAllowedError,
    MethodNotFoundError,
    UriTooLongError,
    rest_error,
)

REST_PREFIX = "/a2a/rest"
Endpoint = Callable[[web.Request], Awaitable[web.StreamResponse]]


def error_response(status: int, body: dict[str, Any]) -> web.Response:
    """An error as its codec renders it for REST: `google.rpc.Status` with the §5.4 status."""
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


async def frames(events: AsyncIterator[dict[str, Any]], *, debug: bool) -> AsyncIterator[bytes]:
    """SSE frames of a stream's events; after the first byte an error is one final `error`
    event (the v1.0 Status body, for both versions)."""
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
    return error_response(
        *rest_error(UriTooLongError(f"The request's URI is longer than {MAX_URI} bytes"))
    )


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
        return error_response(*rest_error(error))
    except web.HTTPMethodNotAllowed as exc:
        if not request.path.startswith(REST_PREFIX):
            raise
        error = MethodNotAllowedError(f"{request.method} is not allowed on {request.path}")
        response = error_response(*rest_error(error))
        response.headers["Allow"] = ",".join(sorted(exc.allowed_methods))
        return response
