"""The v0.3 HTTP+JSON binding under `/a2a/rest/v1` (v0.3 proto ProtoJSON, a2a-protocol.md §2.2).

Errors use the v1.0 `google.rpc.Status` body and statuses, as the reference SDK's compat layer
does, plus the error's type name at the top level for v0.3 clients.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from aiohttp import web

from core.api.calls import Call, encoded, parse
from core.bindings.http.card import card_document
from core.bindings.http.keys import CARD, SETTINGS
from core.bindings.http.rest_common import (
    REST_PREFIX,
    RestResult,
    json_body,
    push_config_routes,
    query_int,
    route,
)
from core.wire import v03_rest
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
)
from core.wire.versions import V0_3

TASK = "{id:[^/:]+}"
V1_PREFIX = REST_PREFIX + "/v1"


def _final_after(closes_at_interrupt: bool) -> Callable[[StreamResponse], dict[str, Any]]:
    return partial(v03_rest.event_out, closes_at_interrupt=closes_at_interrupt)


async def _send_request(request: web.Request) -> SendMessageRequest:
    return parse(SendMessageRequest, v03_rest.send_body_in(await json_body(request)))


async def send(request: web.Request, call: Call) -> RestResult:
    outcome = await call.ops.send_message(
        call.principal, await _send_request(request), version="0.3"
    )
    if isinstance(outcome, Message):
        return {"message": v03_rest.message_out(outcome)}
    return {"task": v03_rest.task_out(outcome)}


async def stream(request: web.Request, call: Call) -> RestResult:
    events = await call.ops.send_streaming_message(
        call.principal, await _send_request(request), version="0.3"
    )
    return encoded(events, _final_after(closes_at_interrupt=True))


def _history_length(request: web.Request) -> int | None:
    # proto int32: 0 (or absent) means no limit in v0.3.
    return query_int(request, "historyLength") or query_int(request, "history_length") or None


async def get_task(request: web.Request, call: Call) -> RestResult:
    params = {"id": request.match_info["id"], "historyLength": _history_length(request)}
    task = await call.ops.get_task(call.principal, parse(GetTaskRequest, params))
    return v03_rest.task_out(task)


async def list_tasks(request: web.Request, call: Call) -> RestResult:
    params: dict[str, Any] = {"historyLength": _history_length(request)}
    if request.query.get("contextId"):
        params["contextId"] = request.query["contextId"]
    page = await call.ops.list_tasks(call.principal, parse(ListTasksRequest, params))
    return [v03_rest.task_out(t) for t in page.tasks]


async def cancel(request: web.Request, call: Call) -> RestResult:
    await json_body(request)
    params = parse(CancelTaskRequest, {"id": request.match_info["id"]})
    return v03_rest.task_out(await call.ops.cancel_task(call.principal, params))


async def subscribe(request: web.Request, call: Call) -> RestResult:
    events = await call.ops.subscribe_to_task(call.principal, request.match_info["id"])
    return encoded(events, _final_after(closes_at_interrupt=False))


def _ids(request: web.Request) -> tuple[str, str]:
    config_id = v03_rest.strip_resource(request.match_info["config_id"], "pushNotificationConfigs")
    return request.match_info["id"], config_id


async def create_push_config(request: web.Request, call: Call) -> RestResult:
    body = v03_rest.push_config_body_in(await json_body(request), request.match_info["id"])
    config = parse(TaskPushNotificationConfig, body)
    created = await call.ops.create_push_config(
        call.principal, config, version="0.3", field="pushNotificationConfig"
    )
    return v03_rest.push_config_out(created)


async def list_push_configs(request: web.Request, call: Call) -> RestResult:
    configs = await call.ops.list_push_configs(call.principal, request.match_info["id"])
    return {"configs": [v03_rest.push_config_out(c) for c in configs]}


async def get_push_config(request: web.Request, call: Call) -> RestResult:
    task_id, config_id = _ids(request)
    config = await call.ops.get_push_config(call.principal, task_id, config_id)
    return v03_rest.push_config_out(config)


async def delete_push_config(request: web.Request, call: Call) -> RestResult:
    task_id, config_id = _ids(request)
    await call.ops.delete_push_config(call.principal, task_id, config_id)
    return {}


async def card(request: web.Request, call: Call) -> RestResult:
    """`GET /v1/card`: the authenticated extended card, or the public one without it."""
    if request.app[SETTINGS].agent_card.extended is None:
        return card_document(request.app[CARD], request)
    return call.card.extended(strict=False)


ROUTES = [
    ("POST", "/message:send", send),
    ("POST", "/message:stream", stream),
    ("GET", "/tasks", list_tasks),
    ("GET", f"/tasks/{TASK}", get_task),
    ("POST", f"/tasks/{TASK}:cancel", cancel),
    ("GET", f"/tasks/{TASK}:subscribe", subscribe),
    ("POST", f"/tasks/{TASK}:subscribe", subscribe),
    *push_config_routes(
        TASK, create_push_config, list_push_configs, get_push_config, delete_push_config
    ),
    ("GET", "/card", card),
]


def add_routes(app: web.Application) -> None:
    for method, path, handler in ROUTES:
        app.router.add_route(method, V1_PREFIX + path, route(handler, version=V0_3, legacy=True))
