"""The A2A operations as every binding and protocol version runs them: one row per operation.

A row's `run` decodes the params with the caller's codec (core/wire/codecs, or the protobuf
codecs of core/bindings/grpc/codecs.py), calls the one `Operations` method, and encodes the
result with the same codec; it never looks at the version or the binding itself. `JSONRPC`
names the rows by each version's method names (v1.0 by the operation, v0.3 by
`category/action`); the REST binding names them by route (core/bindings/http/rest.py), the gRPC
services by RPC (the operation, or the row's `grpc_v03` name in the v0.3 service). Adding an
operation is one row; a new version is one codec.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from core.api.calls import Call, Streaming
from core.wire.codecs import v03, v1
from core.wire.codecs.codec import Codec, OperationCodec
from core.wire.errors import TaskNotFoundError

# What the codec encoded (`Out` for the JSON codecs, a protobuf message on gRPC), or Streaming.
Result = object
Run = Callable[[Call, OperationCodec], Awaitable[Result]]


async def send_message(call: Call, codec: OperationCodec) -> Result:
    request = codec.send_in(call.params)
    outcome = await call.ops.send_message(call.principal, request, version=codec.dialect)
    return codec.sent_out(outcome)


async def send_streaming_message(call: Call, codec: OperationCodec) -> Result:
    request = codec.send_in(call.params)
    events = await call.ops.send_streaming_message(call.principal, request, version=codec.dialect)
    return Streaming(codec.events_out(events, closes_at_interrupt=True))


async def get_task(call: Call, codec: OperationCodec) -> Result:
    request = codec.get_task_in(call.params)
    return codec.task_out(await call.ops.get_task(call.principal, request))


async def list_tasks(call: Call, codec: OperationCodec) -> Result:
    request = codec.list_tasks_in(call.params)
    return codec.tasks_out(await call.ops.list_tasks(call.principal, request))


async def cancel_task(call: Call, codec: OperationCodec) -> Result:
    request = codec.cancel_task_in(call.params)
    return codec.task_out(await call.ops.cancel_task(call.principal, request))


async def subscribe_to_task(call: Call, codec: OperationCodec) -> Result:
    request = codec.subscribe_in(call.params)
    events = await call.ops.subscribe_to_task(call.principal, request.id)
    return Streaming(codec.events_out(events, closes_at_interrupt=False))


async def create_push_config(call: Call, codec: OperationCodec) -> Result:
    config = codec.push_config_in(call.params)
    created = await call.ops.create_push_config(
        call.principal, config, version=codec.dialect, field=codec.push_field
    )
    return codec.push_config_out(created)


async def get_push_config(call: Call, codec: OperationCodec) -> Result:
    """With a lenient codec, a config id the task does not have (or none) gets the config
    named after the task, else its first (the v0.3 TCK asks for "default")."""
    lenient = codec.lenient_push_config_id
    request = codec.push_config_ref_in(call.params, need_id=not lenient)
    try:
        config = await call.ops.get_push_config(call.principal, request.task_id, request.id)
    except TaskNotFoundError:
        if not lenient or request.id is None:
            raise
        config = await call.ops.get_push_config(call.principal, request.task_id, None)
    return codec.push_config_out(config)


async def list_push_configs(call: Call, codec: OperationCodec) -> Result:
    request = codec.push_config_ref_in(call.params, need_id=False)
    configs = await call.ops.list_push_configs(call.principal, request.task_id)
    return codec.push_configs_out(configs, request)


async def delete_push_config(call: Call, codec: OperationCodec) -> Result:
    request = codec.push_config_ref_in(call.params, need_id=True)
    await call.ops.delete_push_config(call.principal, request.task_id, request.id or "")
    return codec.empty_out()


async def extended_card(call: Call, codec: OperationCodec) -> Result:
    if codec.card_public_fallback and not call.card.provider.has_extended:
        return codec.card_out(call.card.public(merged=codec.card_public_merged))
    return codec.card_out(call.card.extended(strict=codec.card_strict))


@dataclass(frozen=True)
class Method:
    """One A2A operation: how it runs, and its v0.3 JSON-RPC name (None: not in v0.3)."""

    operation: str
    run: Run
    v03: str | None
    streaming: bool = False
    # Its RPC in the v0.3 gRPC service where that name is not the operation's.
    grpc_v03: str | None = None
    # Every push operation answers PushNotificationNotSupported while push is off, whatever
    # its params (A2A §3.3.4): checked before they are decoded.
    push: bool = False


METHODS = (
    Method("SendMessage", send_message, "message/send"),
    Method("SendStreamingMessage", send_streaming_message, "message/stream", streaming=True),
    Method("GetTask", get_task, "tasks/get"),
    Method("ListTasks", list_tasks, None),
    Method("CancelTask", cancel_task, "tasks/cancel"),
    Method(
        "SubscribeToTask",
        subscribe_to_task,
        "tasks/resubscribe",
        streaming=True,
        grpc_v03="TaskSubscription",
    ),
    Method(
        "CreateTaskPushNotificationConfig",
        create_push_config,
        "tasks/pushNotificationConfig/set",
        push=True,
    ),
    Method(
        "GetTaskPushNotificationConfig",
        get_push_config,
        "tasks/pushNotificationConfig/get",
        push=True,
    ),
    Method(
        "ListTaskPushNotificationConfigs",
        list_push_configs,
        "tasks/pushNotificationConfig/list",
        push=True,
        grpc_v03="ListTaskPushNotificationConfig",
    ),
    Method(
        "DeleteTaskPushNotificationConfig",
        delete_push_config,
        "tasks/pushNotificationConfig/delete",
        push=True,
    ),
    Method(
        "GetExtendedAgentCard",
        extended_card,
        "agent/getAuthenticatedExtendedCard",
        grpc_v03="GetAgentCard",
    ),
)
BY_OPERATION = {m.operation: m for m in METHODS}


@dataclass(frozen=True)
class Bound:
    """A method with the codec of the caller's version: what a binding calls."""

    method: Method
    codec: Codec

    async def __call__(self, call: Call) -> Result:
        if self.method.push:
            call.ops.require_push()
        return await self.method.run(call, self.codec)


def by_name(codec: Codec, name: Callable[[Method], str | None]) -> dict[str, Bound]:
    """The methods a version has, by the name `name` gives each (None: not in it)."""
    return {n: Bound(m, codec) for m in METHODS if (n := name(m)) is not None}


# JSON-RPC: v1.0 PascalCase names and v0.3 `category/action` names never collide, so the
# name alone picks the version (and so the codec).
JSONRPC = {
    **by_name(v1.CODEC, lambda m: m.operation),
    **by_name(v03.JSONRPC, lambda m: m.v03),
}
