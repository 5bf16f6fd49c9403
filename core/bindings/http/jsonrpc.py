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

from core.api.calls import Streaming
from core.api.errors import as_daemon_error
from core.api.methods import JSONRPC, Bound, Result
from core.bindings.http.body import read_json_body
from core.bindings.http.calls import call_for
from core.bindings.http.keys import CARD, SETTINGS
from core.bindings.http.negotiation import check_extensions, request_version
from core.bindings.http.sse import frame, stream_events
from core.usage import observe
from core.wire import strict_json
from core.wire.codecs import v1
from core.wire.codecs.codec import Codec
from core.wire.errors import MethodNotFoundError
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
from core.wire.versions import require


def _reply(request_id: RequestId, exc: Exception, codec: Codec, debug: bool) -> web.Response:
    error = as_daemon_error(exc, debug=debug)
    observe.failed(error)
    return web.json_response(failure(request_id, codec.rpc_error(error)), dumps=strict_json.dumps)


async def handle(request: web.Request) -> web.StreamResponse:
    settings = request.app[SETTINGS]
    debug = settings.server.debug_errors
    try:
        rpc = parse_request(await read_json_body(request))
    except EnvelopeError as exc:
        return _reply(exc.request_id, exc.error, v1.CODEC, debug)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON-RPC error
        return _reply(None, exc, v1.CODEC, debug)

    # The method name alone picks the version: PascalCase is v1.0, `category/action` v0.3;
    # an unknown method is answered in v1.0's form.
    method = JSONRPC.get(rpc.method)
    codec = v1.CODEC if method is None else method.codec
    observe.method(
        rpc.method if method is not None else observe.OTHER, codec.dialect, rpc.params.get("id")
    )
    ping = settings.server.sse_ping_interval / 1000
    structlog.contextvars.bind_contextvars(rpc_method=rpc.method)
    try:
        result = await _dispatch(request, rpc, method)
    except Exception as exc:  # noqa: BLE001 - every failure becomes a JSON-RPC error
        if method is not None and method.method.streaming and codec.errors_in_stream:
            return await stream_events(
                request, _failed(rpc.id, exc, codec, debug), ping_interval=ping
            )
        return _reply(rpc.id, exc, codec, debug)
    finally:
        structlog.contextvars.unbind_contextvars("rpc_method")

    if isinstance(result, Streaming):
        return await stream_events(
            request, _frames(rpc.id, result.events, codec, debug), ping_interval=ping
        )
    return _success(rpc.id, result)


def _success(request_id: RequestId, result: Result) -> web.Response:
    if isinstance(result, Encoded):
        body = success_json(request_id, result)
        return web.Response(body=body, content_type="application/json")
    return web.json_response(success(request_id, result), dumps=strict_json.dumps)


async def _dispatch(request: web.Request, rpc: RpcRequest, method: Bound | None) -> Result:
    if method is None:
        raise MethodNotFoundError(f"Method not found: {rpc.method}")
    require(request_version(request), method.codec.version)
    check_extensions(request, request.app[CARD].required_extensions)
    call = call_for(request, rpc.params)
    if method.method.push:
        call.ops.require_push()
    return await method.method.run(call, method.codec)


def _error_frame(request_id: RequestId, exc: Exception, codec: Codec, debug: bool) -> bytes:
    """v1.0 names error events `error`; v0.3 sends a plain `data:` line."""
    daemon_error = as_daemon_error(exc, debug=debug)
    observe.failed(daemon_error)
    return frame(failure(request_id, codec.rpc_error(daemon_error)), event=codec.error_event)


async def _failed(
    request_id: RequestId, exc: Exception, codec: Codec, debug: bool
) -> AsyncIterator[bytes]:
    yield _error_frame(request_id, exc, codec, debug)


async def _frames(
    request_id: RequestId, events: AsyncIterator[dict[str, Any]], codec: Codec, debug: bool
) -> AsyncIterator[bytes]:
    try:
        async for event in events:
            yield frame(success(request_id, event))
    except Exception as exc:  # noqa: BLE001 - after the first byte an error is one final event
        yield _error_frame(request_id, exc, codec, debug)
