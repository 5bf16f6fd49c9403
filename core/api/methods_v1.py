"""The A2A v1.0 methods (JSON-RPC and gRPC): decode the ProtoJSON params into v1 models,
call the operation, encode the result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from core.api.calls import Call, Streaming, encoded, parse
from core.wire.errors import InvalidParamsError
from core.wire.jsonrpc import Encoded
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushConfigRequest,
    TaskPushNotificationConfig,
)

Result = dict[str, Any] | list[Any] | None | Streaming | Encoded
Handler = Callable[[Call], Awaitable[Result]]


async def send_message(call: Call) -> Result:
    request = parse(SendMessageRequest, call.params)
    outcome = await call.ops.send_message(call.principal, request)
    key = b"message" if isinstance(outcome, Message) else b"task"
    return Encoded(b'{"' + key + b'":' + outcome.dump_json() + b"}")


async def send_streaming_message(call: Call) -> Result:
    request = parse(SendMessageRequest, call.params)
    return Streaming(
        encoded(await call.ops.send_streaming_message(call.principal, request), StreamResponse.dump)
    )


async def get_task(call: Call) -> Result:
    request = parse(GetTaskRequest, call.params)
    return Encoded((await call.ops.get_task(call.principal, request)).dump_json())


async def list_tasks(call: Call) -> Result:
    request = parse(ListTasksRequest, call.params)
    return Encoded((await call.ops.list_tasks(call.principal, request)).dump_json())


async def cancel_task(call: Call) -> Result:
    request = parse(CancelTaskRequest, call.params)
    return Encoded((await call.ops.cancel_task(call.principal, request)).dump_json())


async def subscribe_to_task(call: Call) -> Result:
    request = parse(SubscribeToTaskRequest, call.params)
    return Streaming(
        encoded(await call.ops.subscribe_to_task(call.principal, request.id), StreamResponse.dump)
    )


def require_push(call: Call) -> None:
    """Every push operation answers PushNotificationNotSupported while push is off, whatever
    its params (A2A §3.3.4): checked before they are decoded."""
    call.ops.require_push()


def config_page(
    configs: list[TaskPushNotificationConfig], page_size: int | None, page_token: str | None
) -> dict[str, Any]:
    """`ListTaskPushNotificationConfigsResponse`; the page token is an offset."""
    try:
        start = int(page_token) if page_token else 0
    except ValueError as exc:
        raise InvalidParamsError(
            "Invalid pageToken", violations=[("pageToken", "invalid")]
        ) from exc
    if start < 0 or (page_size is not None and page_size < 0):
        raise InvalidParamsError("Invalid page", violations=[("pageToken", "invalid")])
    end = start + page_size if page_size else len(configs)
    token = str(end) if end < len(configs) else ""
    return ListTaskPushNotificationConfigsResponse(
        configs=configs[start:end], next_page_token=token
    ).dump()


def _config_request(call: Call, *, need_id: bool) -> TaskPushConfigRequest:
    request = parse(TaskPushConfigRequest, call.params)
    if need_id and not request.id:
        raise InvalidParamsError("id is required", violations=[("id", "required")])
    return request


async def create_push_config(call: Call) -> Result:
    require_push(call)
    config = parse(TaskPushNotificationConfig, call.params)
    created = await call.ops.create_push_config(call.principal, config, version="1.0")
    return created.dump()


async def get_push_config(call: Call) -> Result:
    require_push(call)
    request = _config_request(call, need_id=True)
    config = await call.ops.get_push_config(call.principal, request.task_id, request.id)
    return config.dump()


async def list_push_configs(call: Call) -> Result:
    require_push(call)
    request = _config_request(call, need_id=False)
    configs = await call.ops.list_push_configs(call.principal, request.task_id)
    return config_page(configs, request.page_size, request.page_token)


async def delete_push_config(call: Call) -> Result:
    require_push(call)
    request = _config_request(call, need_id=True)
    await call.ops.delete_push_config(call.principal, request.task_id, request.id or "")
    return None


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
    "CreateTaskPushNotificationConfig": create_push_config,
    "GetTaskPushNotificationConfig": get_push_config,
    "ListTaskPushNotificationConfigs": list_push_configs,
    "DeleteTaskPushNotificationConfig": delete_push_config,
    "GetExtendedAgentCard": extended_card,
}
