"""A2A v1.0 operations: decode params into v1 models, call the service, encode the result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from core.server.calls import Call, Streaming, encoded, parse
from core.wire.errors import PushNotificationNotSupportedError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
)

Result = dict[str, Any] | None | Streaming
Handler = Callable[[Call], Awaitable[Result]]


async def send_message(call: Call) -> Result:
    request = parse(SendMessageRequest, call.params)
    outcome = await call.service.send(call.principal, request)
    key = "message" if isinstance(outcome, Message) else "task"
    return {key: outcome.dump()}


async def send_streaming_message(call: Call) -> Result:
    request = parse(SendMessageRequest, call.params)
    return Streaming(
        encoded(await call.service.stream(call.principal, request), StreamResponse.dump)
    )


async def get_task(call: Call) -> Result:
    request = parse(GetTaskRequest, call.params)
    return (await call.service.get(call.principal, request)).dump()


async def list_tasks(call: Call) -> Result:
    request = parse(ListTasksRequest, call.params)
    return (await call.service.list(call.principal, request)).dump()


async def cancel_task(call: Call) -> Result:
    request = parse(CancelTaskRequest, call.params)
    return (await call.service.cancel(call.principal, request)).dump()


async def subscribe_to_task(call: Call) -> Result:
    request = parse(SubscribeToTaskRequest, call.params)
    return Streaming(
        encoded(await call.service.subscribe(call.principal, request.id), StreamResponse.dump)
    )


async def push_not_supported(call: Call) -> Result:
    raise PushNotificationNotSupportedError


async def extended_card(call: Call) -> Result:
    return call.card.extended(strict=True)


async def extended_card_v03(call: Call) -> Result:
    return call.card.extended(strict=False)


METHODS: dict[str, Handler] = {
    "SendMessage": send_message,
    "SendStreamingMessage": send_streaming_message,
    "GetTask": get_task,
    "ListTasks": list_tasks,
    "CancelTask": cancel_task,
    "SubscribeToTask": subscribe_to_task,
    "CreateTaskPushNotificationConfig": push_not_supported,
    "GetTaskPushNotificationConfig": push_not_supported,
    "ListTaskPushNotificationConfigs": push_not_supported,
    "DeleteTaskPushNotificationConfig": push_not_supported,
    "GetExtendedAgentCard": extended_card,
}
