"""The JSON-RPC binding: `POST /a2a/jsonrpc` (also `/a2a/jsonrpc/` and `/`), both dialects.

Always HTTP 200 with a JSON-RPC body, errors included. The dialect is chosen by the method
name (PascalCase = v1.0, `category/action` = v0.3), then `A2A-Version` is checked against it.
A v1.0 streaming method's errors before its first event are a plain JSON-RPC reply; v0.3
streaming methods report every error inside the stream, as v0.3 clients expect. After the
first event an error is one final event, then the stream closes.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import structlog
from aiohttp import web

from core.api import methods_v1
from core.api.calls import Streaming
from core.api.errors import as_daemon_error
from core.bindings.http import rpc_v03
from core.bindings.http.body import read_json_body
from core.bindings.http.calls import call_for
from core.bindings.http.keys import CARD, SETTINGS
from core.bindings.http.negotiation import check_extensions, request_version
from core.bindings.http.sse import frame, stream_events
from core.usage import observe
from core.wire import strict_json
from core.wire.errors import Dialect, MethodNotFoundError, jsonrpc_error
from core.wire.jsonrpc import (
    Encoded,
    EnvelopeError,
    RequestId,
    RpcRequest,
    failure,
    parse_request,
    success,
    success_json,
)
from core.wire.versions import V0_3, V1_0, require


def _reply(request_id: RequestId, exc: Exception, dialect: Dialect, debug: bool) -> web.Response:
    error = as_daemon_error(exc, debug=debug)
    observe.failed(error)
    return web.json_response(
        failure(request_id, jsonrpc_error(error, dialect)), dumps=strict_json.dumps
    )


async def handle(request: web.Request) -> web.StreamResponse:
    settings = request.app[SETTINGS]
    debug = settings.server.debug_errors
    try:
        rpc = parse_request(await read_json_body(request))
    except EnvelopeError as exc:
        return _reply(exc.request_id, exc.error, "1.0", debug)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON-RPC error
        return _reply(None, exc, "1.0", debug)

    dialect: Dialect = "0.3" if rpc.method in rpc_v03.METHODS else "1.0"
    known = rpc.method in rpc_v03.METHODS or rpc.method in methods_v1.METHODS
    observe.method(rpc.method if known else observe.OTHER, dialect, rpc.params.get("id"))
    ping = settings.server.sse_ping_interval / 1000
    structlog.contextvars.bind_contextvars(rpc_method=rpc.method)
    try:
        result = await _dispatch(request, rpc, dialect)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON-RPC error
        if dialect == "0.3" and rpc.method in rpc_v03.STREAMING:
            return await stream_events(
                request, _failed(rpc.id, exc, dialect, debug), ping_interval=ping
            )
        return _reply(rpc.id, exc, dialect, debug)
    finally:
        structlog.contextvars.unbind_contextvars("rpc_method")

    if isinstance(result, Streaming):
        return await stream_events(
            request, _frames(rpc.id, result.events, dialect, debug), ping_interval=ping
        )
    return _success(rpc.id, result)


def _success(request_id: RequestId, result: methods_v1.Result) -> web.Response:
    if isinstance(result, Encoded):
        body = success_json(request_id, result)
        return web.Response(body=body, content_type="application/json")
    return web.json_response(success(request_id, result), dumps=strict_json.dumps)


async def _dispatch(request: web.Request, rpc: RpcRequest, dialect: Dialect) -> methods_v1.Result:
    table = rpc_v03.METHODS if dialect == "0.3" else methods_v1.METHODS
    handler = table.get(rpc.method)
    if handler is None:
        raise MethodNotFoundError(f"Method not found: {rpc.method}")
    require(request_version(request), V0_3 if dialect == "0.3" else V1_0)
    check_extensions(request, request.app[CARD].required_extensions)
    return await handler(call_for(request, rpc.params))


def _error_frame(request_id: RequestId, exc: Exception, dialect: Dialect, debug: bool) -> bytes:
    """v1.0 names error events `error`; v0.3 sends a plain `data:` line."""
    daemon_error = as_daemon_error(exc, debug=debug)
    observe.failed(daemon_error)
    error = failure(request_id, jsonrpc_error(daemon_error, dialect))
    return frame(error, event="error" if dialect == "1.0" else None)


async def _failed(
    request_id: RequestId, exc: Exception, dialect: Dialect, debug: bool
) -> AsyncIterator[bytes]:
    yield _error_frame(request_id, exc, dialect, debug)


async def _frames(
    request_id: RequestId, events: AsyncIterator[dict[str, Any]], dialect: Dialect, debug: bool
) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            yield frame(success(request_id, event))
    except Exception as exc:  # noqa: BLE001 - after the first byte an error is one final event
        yield _error_frame(request_id, exc, dialect, debug)
