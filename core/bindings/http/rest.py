"""The v1.0 HTTP+JSON binding under `/a2a/rest` (§11, every route also under `/{tenant}`)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from core.api.calls import Call, encoded, parse
from core.api.methods_v1 import config_page
from core.bindings.http.rest_common import (
    REST_PREFIX,
    RestResult,
    json_body,
    push_config_routes,
    query_int,
    route,
)
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
)
from core.wire.versions import V1_0

TASK = "{id:[^/:]+}"


async def send(request: web.Request, call: Call) -> RestResult:
    body = parse(SendMessageRequest, await json_body(request))
    outcome = await call.ops.send_message(call.principal, body)
    return {"message" if isinstance(outcome, Message) else "task": outcome.dump()}


async def stream(request: web.Request, call: Call) -> RestResult:
    body = parse(SendMessageRequest, await json_body(request))
    return encoded(await call.ops.send_streaming_message(call.principal, body), StreamResponse.dump)


async def get_task(request: web.Request, call: Call) -> RestResult:
    params = {"id": request.match_info["id"], "historyLength": query_int(request, "historyLength")}
    return (await call.ops.get_task(call.principal, parse(GetTaskRequest, params))).dump()


def _list_params(request: web.Request) -> dict[str, Any]:
    query = request.query
    params: dict[str, Any] = {
        key: query[key]
        for key in ("contextId", "status", "pageToken", "statusTimestampAfter")
        if query.get(key)
    }
    for key in ("pageSize", "historyLength"):
        number = query_int(request, key)
        if number is not None:
            params[key] = number
    if "includeArtifacts" in query:
        params["includeArtifacts"] = query["includeArtifacts"]
    return params


async def list_tasks(request: web.Request, call: Call) -> RestResult:
    params = parse(ListTasksRequest, _list_params(request))
    return (await call.ops.list_tasks(call.principal, params)).dump()


async def cancel(request: web.Request, call: Call) -> RestResult:
    body = await json_body(request)
    params = parse(CancelTaskRequest, {**body, "id": request.match_info["id"]})
    return (await call.ops.cancel_task(call.principal, params)).dump()


async def subscribe(request: web.Request, call: Call) -> RestResult:
    stream = await call.ops.subscribe_to_task(call.principal, request.match_info["id"])
    return encoded(stream, StreamResponse.dump)


async def create_push_config(request: web.Request, call: Call) -> RestResult:
    body = {**await json_body(request), "taskId": request.match_info["id"]}
    config = parse(TaskPushNotificationConfig, body)
    return (await call.ops.create_push_config(call.principal, config, version="1.0")).dump()


async def list_push_configs(request: web.Request, call: Call) -> RestResult:
    configs = await call.ops.list_push_configs(call.principal, request.match_info["id"])
    page_size = query_int(request, "pageSize")
    return config_page(configs, page_size, request.query.get("pageToken"))


async def get_push_config(request: web.Request, call: Call) -> RestResult:
    task_id, config_id = request.match_info["id"], request.match_info["config_id"]
    return (await call.ops.get_push_config(call.principal, task_id, config_id)).dump()


async def delete_push_config(request: web.Request, call: Call) -> RestResult:
    task_id, config_id = request.match_info["id"], request.match_info["config_id"]
    await call.ops.delete_push_config(call.principal, task_id, config_id)
    return {}


async def extended_card(request: web.Request, call: Call) -> RestResult:
    return call.card.extended(strict=True)


ROUTES = [
    ("POST", "/message:send", send),
    ("POST", "/message:stream", stream),
    ("GET", "/tasks", list_tasks),
    ("GET", f"/tasks/{TASK}", get_task),
    ("POST", f"/tasks/{TASK}:cancel", cancel),
    ("POST", f"/tasks/{TASK}:subscribe", subscribe),
    ("GET", f"/tasks/{TASK}:subscribe", subscribe),
    *push_config_routes(
        TASK, create_push_config, list_push_configs, get_push_config, delete_push_config
    ),
    ("GET", "/extendedAgentCard", extended_card),
]


def add_routes(app: web.Application) -> None:
    """Plain routes, then the `/{tenant}` forms. Register the v0.3 `/v1` routes first."""
    for prefix in (REST_PREFIX, REST_PREFIX + "/{tenant:[^/:]+}"):
        for method, path, handler in ROUTES:
            app.router.add_route(method, prefix + path, route(handler, version=V1_0))
