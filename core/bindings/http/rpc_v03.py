"""A2A v0.3 JSON-RPC operations: the v0.3 codec at the edge, the same service inside."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from core.api.calls import Call, Streaming, encoded, parse
from core.api.methods_v1 import Handler, Result, extended_card_v03, require_push
from core.wire import v03
from core.wire.errors import InvalidParamsError, TaskNotFoundError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
)

STREAMING = frozenset({"message/stream", "tasks/resubscribe"})


def _final_after(closes_at_interrupt: bool) -> Callable[[StreamResponse], dict[str, Any]]:
    return partial(v03.event_out, closes_at_interrupt=closes_at_interrupt)


def _send_request(call: Call) -> SendMessageRequest:
    return parse(SendMessageRequest, v03.send_params_in(call.params))


async def message_send(call: Call) -> Result:
    outcome = await call.ops.send_message(call.principal, _send_request(call), version="0.3")
    if isinstance(outcome, Message):
        return v03.message_out(outcome)
    return v03.task_out(outcome)


async def message_stream(call: Call) -> Result:
    stream = await call.ops.send_streaming_message(
        call.principal, _send_request(call), version="0.3"
    )
    return Streaming(encoded(stream, _final_after(closes_at_interrupt=True)))


async def tasks_get(call: Call) -> Result:
    request = parse(GetTaskRequest, call.params)
    return v03.task_out(await call.ops.get_task(call.principal, request))


async def tasks_cancel(call: Call) -> Result:
    request = parse(CancelTaskRequest, call.params)
    return v03.task_out(await call.ops.cancel_task(call.principal, request))


async def tasks_resubscribe(call: Call) -> Result:
    request = parse(SubscribeToTaskRequest, call.params)
    stream = await call.ops.subscribe_to_task(call.principal, request.id)
    return Streaming(encoded(stream, _final_after(closes_at_interrupt=False)))


def _task_id(call: Call) -> str:
    task_id = call.params.get("id")
    if not isinstance(task_id, str) or not task_id:
        raise InvalidParamsError("id (the task id) is required", violations=[("id", "required")])
    return task_id


def _config_id(call: Call) -> str | None:
    config_id = call.params.get("pushNotificationConfigId")
    if config_id is not None and not isinstance(config_id, str):
        raise InvalidParamsError(
            "pushNotificationConfigId must be a string",
            violations=[("pushNotificationConfigId", "must be a string")],
        )
    return config_id or None


async def push_config_set(call: Call) -> Result:
    require_push(call)
    config = parse(TaskPushNotificationConfig, v03.task_push_config_in(call.params))
    created = await call.ops.create_push_config(
        call.principal, config, version="0.3", field="pushNotificationConfig"
    )
    return v03.task_push_config_out(created)


async def push_config_get(call: Call) -> Result:
    """Without a config id, or with one the task does not have, the config named after the
    task, else its first: the v0.3 SDK ignored the id here, and v0.3 clients (and the v0.3
    TCK, which asks for "default") rely on that."""
    require_push(call)
    task_id, config_id = _task_id(call), _config_id(call)
    try:
        config = await call.ops.get_push_config(call.principal, task_id, config_id)
    except TaskNotFoundError:
        if config_id is None:
            raise
        config = await call.ops.get_push_config(call.principal, task_id, None)
    return v03.task_push_config_out(config)


async def push_config_list(call: Call) -> Result:
    require_push(call)
    configs = await call.ops.list_push_configs(call.principal, _task_id(call))
    return [v03.task_push_config_out(c) for c in configs]


async def push_config_delete(call: Call) -> Result:
    require_push(call)
    task_id, config_id = _task_id(call), _config_id(call)
    if config_id is None:
        raise InvalidParamsError(
            "pushNotificationConfigId is required",
            violations=[("pushNotificationConfigId", "required")],
        )
    await call.ops.delete_push_config(call.principal, task_id, config_id)
    return None


METHODS: dict[str, Handler] = {
    "message/send": message_send,
    "message/stream": message_stream,
    "tasks/get": tasks_get,
    "tasks/cancel": tasks_cancel,
    "tasks/resubscribe": tasks_resubscribe,
    "tasks/pushNotificationConfig/set": push_config_set,
    "tasks/pushNotificationConfig/get": push_config_get,
    "tasks/pushNotificationConfig/list": push_config_list,
    "tasks/pushNotificationConfig/delete": push_config_delete,
    "agent/getAuthenticatedExtendedCard": extended_card_v03,
}
