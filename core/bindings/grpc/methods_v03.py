"""The v0.3 gRPC operations (`a2a.v1.A2AService` of the v0.3 proto): params are the v0.3
ProtoJSON of each request (resource names such as `tasks/{id}`), results the v0.3 ProtoJSON
the v0.3 HTTP+JSON binding also sends (`core.wire.codecs.v03.PROTO`)."""

from __future__ import annotations

from functools import partial
from typing import Any

from core.api.calls import Call, Streaming, encoded, parse
from core.api.methods import Handler, Result, require_push
from core.wire.codecs.v03 import PROTO as v03_rest
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
)


def _resource(call: Call, key: str) -> list[str]:
    """`tasks/{id}[/pushNotificationConfigs[/{configId}]]` -> [id, configId?]."""
    name = call.params.get(key)
    pieces = name.split("/") if isinstance(name, str) else []
    if len(pieces) < 2 or pieces[0] != "tasks" or not pieces[1]:
        raise InvalidParamsError(
            f"{key} must be a resource name like tasks/{{id}}", violations=[(key, "invalid")]
        )
    return [pieces[1], *pieces[3:4]]


def _send_request(call: Call) -> SendMessageRequest:
    return v03_rest.send_in(call.params)


async def send_message(call: Call) -> Result:
    outcome = await call.ops.send_message(call.principal, _send_request(call), version="0.3")
    if isinstance(outcome, Message):
        return {"message": v03_rest.message_out(outcome)}
    return {"task": v03_rest.task_out(outcome)}


async def send_streaming_message(call: Call) -> Result:
    events = await call.ops.send_streaming_message(
        call.principal, _send_request(call), version="0.3"
    )
    return Streaming(encoded(events, partial(v03_rest.event_out, closes_at_interrupt=True)))


async def get_task(call: Call) -> Result:
    [task_id, *_] = _resource(call, "name")
    # proto int32: 0 (absent) means no limit in v0.3.
    params = {"id": task_id, "historyLength": call.params.get("historyLength") or None}
    return v03_rest.task_out(await call.ops.get_task(call.principal, parse(GetTaskRequest, params)))


async def cancel_task(call: Call) -> Result:
    [task_id, *_] = _resource(call, "name")
    request = parse(CancelTaskRequest, {"id": task_id})
    return v03_rest.task_out(await call.ops.cancel_task(call.principal, request))


async def task_subscription(call: Call) -> Result:
    [task_id, *_] = _resource(call, "name")
    events = await call.ops.subscribe_to_task(call.principal, task_id)
    return Streaming(encoded(events, partial(v03_rest.event_out, closes_at_interrupt=False)))


async def create_push_config(call: Call) -> Result:
    require_push(call)
    [task_id, *_] = _resource(call, "parent")
    config = v03_rest.push_config_in({**call.params, "taskId": task_id})
    created = await call.ops.create_push_config(
        call.principal, config, version="0.3", field="pushNotificationConfig"
    )
    return v03_rest.push_config_out(created)


async def get_push_config(call: Call) -> Result:
    require_push(call)
    ids = _resource(call, "name")
    config_id = ids[1] if len(ids) > 1 else None
    config = await call.ops.get_push_config(call.principal, ids[0], config_id)
    return v03_rest.push_config_out(config)


async def list_push_configs(call: Call) -> Result:
    require_push(call)
    [task_id, *_] = _resource(call, "parent")
    configs = await call.ops.list_push_configs(call.principal, task_id)
    return {"configs": [v03_rest.push_config_out(c) for c in configs]}


async def delete_push_config(call: Call) -> Result:
    require_push(call)
    ids = _resource(call, "name")
    if len(ids) < 2:
        raise InvalidParamsError(
            "name must be tasks/{id}/pushNotificationConfigs/{configId}",
            violations=[("name", "invalid")],
        )
    await call.ops.delete_push_config(call.principal, ids[0], ids[1])
    return None


async def get_agent_card(call: Call) -> Result:
    """The extended card when one is configured (gRPC calls are authenticated), else the
    public one, as the v0.3 REST `GET /v1/card` answers."""
    card: dict[str, Any] = call.card.extended_or_public(strict=False)
    return card


METHODS: dict[str, Handler] = {
    "SendMessage": send_message,
    "SendStreamingMessage": send_streaming_message,
    "GetTask": get_task,
    "CancelTask": cancel_task,
    "TaskSubscription": task_subscription,
    "CreateTaskPushNotificationConfig": create_push_config,
    "GetTaskPushNotificationConfig": get_push_config,
    "ListTaskPushNotificationConfig": list_push_configs,
    "DeleteTaskPushNotificationConfig": delete_push_config,
    "GetAgentCard": get_agent_card,
}
