"""A2A v0.3 JSON-RPC operations: the v0.3 codec at the edge, the same service inside."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from core.server.calls import Call, Streaming, encoded, parse
from core.server.rpc_v1 import Handler, Result, extended_card_v03, push_not_supported
from core.wire import v03
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
)

STREAMING = frozenset({"message/stream", "tasks/resubscribe"})


def _final_after(closes_at_interrupt: bool) -> Callable[[StreamResponse], dict[str, Any]]:
    return partial(v03.event_out, closes_at_interrupt=closes_at_interrupt)


def _send_request(call: Call) -> SendMessageRequest:
    return parse(SendMessageRequest, v03.send_params_in(call.params))


async def message_send(call: Call) -> Result:
    outcome = await call.service.send(call.principal, _send_request(call))
    if isinstance(outcome, Message):
        return v03.message_out(outcome)
    return v03.task_out(outcome)


async def message_stream(call: Call) -> Result:
    stream = await call.service.stream(call.principal, _send_request(call))
    return Streaming(encoded(stream, _final_after(closes_at_interrupt=True)))


async def tasks_get(call: Call) -> Result:
    request = parse(GetTaskRequest, call.params)
    return v03.task_out(await call.service.get(call.principal, request))


async def tasks_cancel(call: Call) -> Result:
    request = parse(CancelTaskRequest, call.params)
    return v03.task_out(await call.service.cancel(call.principal, request))


async def tasks_resubscribe(call: Call) -> Result:
    request = parse(SubscribeToTaskRequest, call.params)
    stream = await call.service.subscribe(call.principal, request.id)
    return Streaming(encoded(stream, _final_after(closes_at_interrupt=False)))


METHODS: dict[str, Handler] = {
    "message/send": message_send,
    "message/stream": message_stream,
    "tasks/get": tasks_get,
    "tasks/cancel": tasks_cancel,
    "tasks/resubscribe": tasks_resubscribe,
    "tasks/pushNotificationConfig/set": push_not_supported,
    "tasks/pushNotificationConfig/get": push_not_supported,
    "tasks/pushNotificationConfig/list": push_not_supported,
    "tasks/pushNotificationConfig/delete": push_not_supported,
    "agent/getAuthenticatedExtendedCard": extended_card_v03,
}
