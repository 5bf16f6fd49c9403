"""The HTTP+JSON binding of both versions: one route table, one row per A2A operation.

v1.0 is served under `/a2a/rest` (§11, every route also under `/{tenant}`), v0.3 under
`/a2a/rest/v1` (the v0.3 proto's ProtoJSON, a2a-protocol.md §2.2). A route turns the request
into the operation's params (the JSON body, if the route reads one, with the path parameters
and the route's query parameters merged in, named as the v1 request names them) and runs the
operation's method (core/api/methods.py) with the version's codec.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from core.api.calls import Streaming
from core.api.errors import as_daemon_error
from core.api.methods import BY_OPERATION, Method
from core.bindings.http.calls import call_for
from core.bindings.http.keys import CARD, OPERATIONS, SETTINGS
from core.bindings.http.negotiation import check_extensions, request_version
from core.bindings.http.rest_common import (
    REST_PREFIX,
    Endpoint,
    error_response,
    frames,
    json_body,
    query_int,
)
from core.bindings.http.sse import stream_events
from core.usage import observe
from core.wire import strict_json
from core.wire.codecs import v03, v1
from core.wire.codecs.codec import Codec
from core.wire.jsonrpc import Encoded
from core.wire.versions import V0_3, V1_0, Version, require

TASK = "/tasks/{id:[^/:]+}"
CONFIGS = "/tasks/{taskId:[^/:]+}/pushNotificationConfigs"
# Query parameters that are numbers; `includeArtifacts` is passed as given (even empty), the
# rest only when not empty.
INT_QUERY = frozenset({"historyLength", "history_length", "pageSize"})
RAW_QUERY = frozenset({"includeArtifacts"})
# v0.3's proto takes its field names (snake_case) too; an int32 of 0 there means "no limit".
V03_HISTORY = ("historyLength", "history_length")


@dataclass(frozen=True)
class Route:
    """One operation at one HTTP method and path; `path` and `query` per version where they
    differ (a version missing from a per-version `path` does not have the route)."""

    operation: str
    http_method: str
    path: str | Mapping[Version, str]
    body: bool = False
    query: tuple[str, ...] | Mapping[Version, tuple[str, ...]] = field(default=())

    def path_for(self, version: Version) -> str | None:
        return self.path if isinstance(self.path, str) else self.path.get(version)

    def query_for(self, version: Version) -> tuple[str, ...]:
        return self.query if isinstance(self.query, tuple) else self.query[version]


LIST_QUERY = (
    "contextId",
    "status",
    "pageToken",
    "statusTimestampAfter",
    "pageSize",
    "historyLength",
    "includeArtifacts",
)

ROUTES = (
    Route("SendMessage", "POST", "/message:send", body=True),
    Route("SendStreamingMessage", "POST", "/message:stream", body=True),
    Route(
        "ListTasks", "GET", "/tasks", query={V1_0: LIST_QUERY, V0_3: ("contextId", *V03_HISTORY)}
    ),
    Route("GetTask", "GET", TASK, query={V1_0: ("historyLength",), V0_3: V03_HISTORY}),
    Route("CancelTask", "POST", TASK + ":cancel", body=True),
    Route("SubscribeToTask", "POST", TASK + ":subscribe"),
    Route("SubscribeToTask", "GET", TASK + ":subscribe"),
    Route("CreateTaskPushNotificationConfig", "POST", CONFIGS, body=True),
    Route(
        "ListTaskPushNotificationConfigs",
        "GET",
        CONFIGS,
        query={V1_0: ("pageSize", "pageToken"), V0_3: ()},
    ),
    Route("GetTaskPushNotificationConfig", "GET", CONFIGS + "/{id}"),
    Route("DeleteTaskPushNotificationConfig", "DELETE", CONFIGS + "/{id}"),
    Route("GetExtendedAgentCard", "GET", {V1_0: "/extendedAgentCard", V0_3: "/card"}),
)

# Each version's prefixes and codec. v0.3 first: otherwise `/v1/tasks/x` would match
# `/{tenant}/tasks/{id}` with tenant "v1".
VERSIONS: tuple[tuple[Codec, tuple[str, ...]], ...] = (
    (v03.PROTO, (REST_PREFIX + "/v1",)),
    (v1.CODEC, (REST_PREFIX, REST_PREFIX + "/{tenant:[^/:]+}")),
)


async def _params(request: web.Request, route: Route, version: Version) -> dict[str, Any]:
    params: dict[str, Any] = await json_body(request) if route.body else {}
    query = request.query
    for name in route.query_for(version):
        if name in INT_QUERY:
            number = query_int(request, name)
            if number is not None:
                params[name] = number
        elif name in RAW_QUERY:
            if name in query:
                params[name] = query[name]
        elif query.get(name):
            params[name] = query[name]
    # The path wins over the body (the task a URL names is the task acted on).
    params.update((k, v) for k, v in request.match_info.items() if k != "tenant")
    return params


def endpoint(route: Route, method: Method, codec: Codec) -> Endpoint:
    """Negotiate, decode, run, encode: the result, the error, or the stream of events."""
    version = codec.version

    async def handle(request: web.Request) -> web.StreamResponse:
        settings = request.app[SETTINGS]
        debug = settings.server.debug_errors
        task_id = request.match_info.get("taskId") or request.match_info.get("id")
        observe.method(method.operation, codec.dialect, task_id)
        try:
            require(request_version(request), version)
            check_extensions(request, request.app[CARD].required_extensions)
            if method.push:
                # Before the request is read: push operations answer alike while push is off.
                request.app[OPERATIONS].require_push()
            call = call_for(request, await _params(request, route, version))
            result = await method.run(call, codec)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a Status body
            error = as_daemon_error(exc, debug=debug)
            observe.failed(error)
            return error_response(*codec.rest_error(error))
        if isinstance(result, Streaming):
            return await stream_events(
                request,
                frames(result.events, debug=debug),
                ping_interval=settings.server.sse_ping_interval / 1000,
            )
        if isinstance(result, Encoded):
            return web.Response(body=result.json, content_type="application/json", charset="utf-8")
        return web.json_response({} if result is None else result, dumps=strict_json.dumps)

    return handle


def add_routes(app: web.Application) -> None:
    for codec, prefixes in VERSIONS:
        for prefix in prefixes:
            for route in ROUTES:
                path = route.path_for(codec.version)
                if path is not None:
                    handler = endpoint(route, BY_OPERATION[route.operation], codec)
                    app.router.add_route(route.http_method, prefix + path, handler)
