"""The gRPC methods of both services, one table per service version: each RPC decodes its
request message into the v1 wire models (`proto_v1`, `proto_v03`), calls the A2A operation
on `Operations`, and encodes the result (or each stream event) as the response message.

The card is the one answer that stays a JSON document (`core.api.card` builds it, merged with
the v0.3 fields for v0.3 callers, and signs its JSON form): it is parsed into the `AgentCard`
message, its keys unknown to the proto dropped.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from google.protobuf import empty_pb2, json_format
from google.protobuf.message import Message as Proto

from core.api.card import CardView
from core.api.operations import Operations
from core.bindings.grpc import proto_v03 as v03
from core.bindings.grpc import proto_v1 as v1
from core.bindings.grpc.protos import v03_pb2, v1_pb2
from core.wire.codecs.codec import parse
from core.wire.codecs.v1 import push_config_page
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    StreamResponse,
)


@dataclass(frozen=True)
class Caller:
    """One authenticated RPC: who calls, and the cards as its base URL shows them."""

    ops: Operations
    principal: str
    card: CardView


Answer = Proto | AsyncIterator[Proto]
Method = Callable[[Caller, Any], Awaitable[Answer]]


async def _events(
    events: AsyncIterable[StreamResponse], encode: Callable[[StreamResponse], Proto]
) -> AsyncIterator[Proto]:
    async for event in events:
        yield encode(event)


def _push(method: Method) -> Method:
    """Every push operation answers PushNotificationNotSupported while push is off, whatever
    its request (A2A §3.3.4): checked before the request is decoded."""

    async def checked(caller: Caller, request: Any) -> Answer:
        caller.ops.require_push()
        return await method(caller, request)

    return checked


def _card(message: type[Proto], document: dict[str, Any]) -> Proto:
    card = message()
    json_format.ParseDict(document, card, ignore_unknown_fields=True)
    return card


# ----- v1.0: lf.a2a.v1.A2AService -------------------------------------------------------------


async def _send_v1(caller: Caller, request: v1_pb2.SendMessageRequest) -> Answer:
    outcome = await caller.ops.send_message(caller.principal, v1.send_request(request))
    return v1.send_response(outcome)


async def _stream_v1(caller: Caller, request: v1_pb2.SendMessageRequest) -> Answer:
    send = v1.send_request(request)
    return _events(await caller.ops.send_streaming_message(caller.principal, send), v1.event_out)


async def _get_task_v1(caller: Caller, request: v1_pb2.GetTaskRequest) -> Answer:
    task = await caller.ops.get_task(caller.principal, v1.get_task_request(request))
    return v1.task_out(task)


async def _list_tasks_v1(caller: Caller, request: v1_pb2.ListTasksRequest) -> Answer:
    result = await caller.ops.list_tasks(caller.principal, v1.list_tasks_request(request))
    return v1.task_list_out(result)


async def _cancel_v1(caller: Caller, request: v1_pb2.CancelTaskRequest) -> Answer:
    task = await caller.ops.cancel_task(caller.principal, v1.cancel_request(request))
    return v1.task_out(task)


async def _subscribe_v1(caller: Caller, request: v1_pb2.SubscribeToTaskRequest) -> Answer:
    task_id = v1.subscribe_request(request).id
    return _events(await caller.ops.subscribe_to_task(caller.principal, task_id), v1.event_out)


async def _create_push_v1(caller: Caller, request: v1_pb2.TaskPushNotificationConfig) -> Answer:
    config = v1.push_config(request)
    created = await caller.ops.create_push_config(caller.principal, config, version="1.0")
    return v1.push_config_out(created)


async def _get_push_v1(
    caller: Caller, request: v1_pb2.GetTaskPushNotificationConfigRequest
) -> Answer:
    found = v1.push_config_request(request, need_id=True)
    config = await caller.ops.get_push_config(caller.principal, found.task_id, found.id)
    return v1.push_config_out(config)


async def _list_push_v1(
    caller: Caller, request: v1_pb2.ListTaskPushNotificationConfigsRequest
) -> Answer:
    found = v1.push_config_request(request, need_id=False)
    configs = await caller.ops.list_push_configs(caller.principal, found.task_id)
    page = push_config_page(configs, found)
    out = v1_pb2.ListTaskPushNotificationConfigsResponse(next_page_token=page.next_page_token)
    for config in page.configs:
        v1.push_config_out(config, out.configs.add())
    return out


async def _delete_push_v1(
    caller: Caller, request: v1_pb2.DeleteTaskPushNotificationConfigRequest
) -> Answer:
    found = v1.push_config_request(request, need_id=True)
    await caller.ops.delete_push_config(caller.principal, found.task_id, found.id or "")
    return empty_pb2.Empty()


async def _card_v1(caller: Caller, request: v1_pb2.GetExtendedAgentCardRequest) -> Answer:
    return _card(v1_pb2.AgentCard, caller.card.extended(strict=True))


V1: dict[str, Method] = {
    "SendMessage": _send_v1,
    "SendStreamingMessage": _stream_v1,
    "GetTask": _get_task_v1,
    "ListTasks": _list_tasks_v1,
    "CancelTask": _cancel_v1,
    "SubscribeToTask": _subscribe_v1,
    "CreateTaskPushNotificationConfig": _push(_create_push_v1),
    "GetTaskPushNotificationConfig": _push(_get_push_v1),
    "ListTaskPushNotificationConfigs": _push(_list_push_v1),
    "DeleteTaskPushNotificationConfig": _push(_delete_push_v1),
    "GetExtendedAgentCard": _card_v1,
}


# ----- v0.3: a2a.v1.A2AService of the v0.3 proto ----------------------------------------------


async def _send_v03(caller: Caller, request: v03_pb2.SendMessageRequest) -> Answer:
    send = v03.send_request(request)
    return v03.send_response(await caller.ops.send_message(caller.principal, send, version="0.3"))


async def _stream_v03(caller: Caller, request: v03_pb2.SendMessageRequest) -> Answer:
    send = v03.send_request(request)
    events = await caller.ops.send_streaming_message(caller.principal, send, version="0.3")
    return _events(events, partial(v03.event_out, closes_at_interrupt=True))


async def _get_task_v03(caller: Caller, request: v03_pb2.GetTaskRequest) -> Answer:
    [task_id, *_] = v03.resource(request.name, "name")
    # proto int32: 0 (absent) means no limit in v0.3.
    get = parse(GetTaskRequest, {"id": task_id, "historyLength": request.history_length or None})
    return v03.task_out(await caller.ops.get_task(caller.principal, get))


async def _cancel_v03(caller: Caller, request: v03_pb2.CancelTaskRequest) -> Answer:
    [task_id, *_] = v03.resource(request.name, "name")
    cancel = parse(CancelTaskRequest, {"id": task_id})
    return v03.task_out(await caller.ops.cancel_task(caller.principal, cancel))


async def _subscribe_v03(caller: Caller, request: v03_pb2.TaskSubscriptionRequest) -> Answer:
    [task_id, *_] = v03.resource(request.name, "name")
    events = await caller.ops.subscribe_to_task(caller.principal, task_id)
    return _events(events, partial(v03.event_out, closes_at_interrupt=False))


async def _create_push_v03(
    caller: Caller, request: v03_pb2.CreateTaskPushNotificationConfigRequest
) -> Answer:
    config = v03.push_config(request)
    created = await caller.ops.create_push_config(
        caller.principal, config, version="0.3", field="pushNotificationConfig"
    )
    return v03.push_config_out(created)


async def _get_push_v03(
    caller: Caller, request: v03_pb2.GetTaskPushNotificationConfigRequest
) -> Answer:
    ids = v03.resource(request.name, "name")
    config_id = ids[1] if len(ids) > 1 else None
    return v03.push_config_out(
        await caller.ops.get_push_config(caller.principal, ids[0], config_id)
    )


async def _list_push_v03(
    caller: Caller, request: v03_pb2.ListTaskPushNotificationConfigRequest
) -> Answer:
    [task_id, *_] = v03.resource(request.parent, "parent")
    out = v03_pb2.ListTaskPushNotificationConfigResponse()
    for config in await caller.ops.list_push_configs(caller.principal, task_id):
        v03.push_config_out(config, out.configs.add())
    return out


async def _delete_push_v03(
    caller: Caller, request: v03_pb2.DeleteTaskPushNotificationConfigRequest
) -> Answer:
    ids = v03.resource(request.name, "name")
    if len(ids) < 2:
        raise InvalidParamsError(
            "name must be tasks/{id}/pushNotificationConfigs/{configId}",
            violations=[("name", "invalid")],
        )
    await caller.ops.delete_push_config(caller.principal, ids[0], ids[1])
    return empty_pb2.Empty()


async def _card_v03(caller: Caller, request: v03_pb2.GetAgentCardRequest) -> Answer:
    """The extended card when one is configured (gRPC calls are authenticated), else the
    public one, as the v0.3 REST `GET /v1/card` answers."""
    return _card(v03_pb2.AgentCard, caller.card.extended_or_public(strict=False))


V03: dict[str, Method] = {
    "SendMessage": _send_v03,
    "SendStreamingMessage": _stream_v03,
    "GetTask": _get_task_v03,
    "CancelTask": _cancel_v03,
    "TaskSubscription": _subscribe_v03,
    "CreateTaskPushNotificationConfig": _push(_create_push_v03),
    "GetTaskPushNotificationConfig": _push(_get_push_v03),
    "ListTaskPushNotificationConfig": _push(_list_push_v03),
    "DeleteTaskPushNotificationConfig": _push(_delete_push_v03),
    "GetAgentCard": _card_v03,
}
