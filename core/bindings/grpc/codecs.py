"""The protobuf codecs of both gRPC services: the method table (core/api/methods.py) runs each
RPC with one of them as the JSON bindings run theirs with a JSON codec. The params are the
request message; it is decoded field by field into the v1 wire models, and results and stream
events are encoded straight into the response messages (`proto_v1`, `proto_v03`), with no
ProtoJSON in between.

The card is the one answer that stays a JSON document (`core.api.card` builds it, merged with
the v0.3 fields for v0.3 callers, and signs its JSON form): it is parsed into the `AgentCard`
message, its keys unknown to the proto dropped. Errors leave as `google.rpc.Status`
(`status.py`), rendered by the server.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from functools import partial
from typing import Any

from google.protobuf import empty_pb2, json_format
from google.protobuf.message import Message as Proto

from core.bindings.grpc import proto_v03, proto_v1
from core.bindings.grpc.protos import v03_pb2, v1_pb2
from core.wire.codecs.codec import encoded, parse
from core.wire.codecs.v1 import push_config_page
from core.wire.errors import Dialect, InvalidParamsError, UnsupportedOperationError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushConfigRequest,
    TaskPushNotificationConfig,
)
from core.wire.versions import V0_3, V1_0


def _card(message: type[Proto], document: dict[str, Any]) -> Proto:
    card = message()
    json_format.ParseDict(document, card, ignore_unknown_fields=True)
    return card


class V1ProtoCodec:
    """v1.0: `lf.a2a.v1.A2AService`, its RPCs named after the operations."""

    version = V1_0
    dialect: Dialect = "1.0"
    push_field = ""
    lenient_push_config_id = False
    card_strict = True
    card_public_fallback = False
    card_public_merged = False

    def send_in(self, params: v1_pb2.SendMessageRequest) -> SendMessageRequest:
        return proto_v1.send_request(params)

    def get_task_in(self, params: v1_pb2.GetTaskRequest) -> GetTaskRequest:
        return proto_v1.get_task_request(params)

    def list_tasks_in(self, params: v1_pb2.ListTasksRequest) -> ListTasksRequest:
        return proto_v1.list_tasks_request(params)

    def cancel_task_in(self, params: v1_pb2.CancelTaskRequest) -> CancelTaskRequest:
        return proto_v1.cancel_request(params)

    def subscribe_in(self, params: v1_pb2.SubscribeToTaskRequest) -> SubscribeToTaskRequest:
        return proto_v1.subscribe_request(params)

    def push_config_in(
        self, params: v1_pb2.TaskPushNotificationConfig
    ) -> TaskPushNotificationConfig:
        return proto_v1.push_config(params)

    def push_config_ref_in(
        self,
        params: v1_pb2.GetTaskPushNotificationConfigRequest
        | v1_pb2.DeleteTaskPushNotificationConfigRequest
        | v1_pb2.ListTaskPushNotificationConfigsRequest,
        *,
        need_id: bool,
    ) -> TaskPushConfigRequest:
        return proto_v1.push_config_request(params, need_id=need_id)

    def sent_out(self, outcome: Task | Message) -> Proto:
        return proto_v1.send_response(outcome)

    def task_out(self, task: Task) -> Proto:
        return proto_v1.task_out(task)

    def tasks_out(self, page: ListTasksResponse) -> Proto:
        return proto_v1.task_list_out(page)

    def events_out(
        self, events: AsyncIterable[StreamResponse], *, closes_at_interrupt: bool
    ) -> AsyncIterator[Proto]:
        # v1.0 streams carry no `final` flag: the server closing the stream says it.
        return encoded(events, proto_v1.event_out)

    def push_config_out(self, config: TaskPushNotificationConfig) -> Proto:
        return proto_v1.push_config_out(config)

    def push_configs_out(
        self, configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
    ) -> Proto:
        """One page, paged as the JSON bindings page it."""
        page = push_config_page(configs, request)
        out = v1_pb2.ListTaskPushNotificationConfigsResponse(next_page_token=page.next_page_token)
        for config in page.configs:
            proto_v1.push_config_out(config, out.configs.add())
        return out

    def empty_out(self) -> Proto:
        return empty_pb2.Empty()

    def card_out(self, card: dict[str, Any]) -> Proto:
        return _card(v1_pb2.AgentCard, card)


class V03ProtoCodec:
    """v0.3: `a2a.v1.A2AService` of the v0.3 proto. Its requests name tasks and push configs
    by resource (`tasks/{id}[/pushNotificationConfigs/{configId}]`); it has no ListTasks."""

    version = V0_3
    dialect: Dialect = "0.3"
    push_field = "pushNotificationConfig"
    # A config id is optional on get (the task's config), whatever the method table asks.
    lenient_push_config_id = False
    card_strict = False
    # GetAgentCard: the extended card when one is configured (gRPC calls are authenticated),
    # else the public one, as the v0.3 REST `GET /v1/card` answers.
    card_public_fallback = True
    card_public_merged = True

    def send_in(self, params: v03_pb2.SendMessageRequest) -> SendMessageRequest:
        return proto_v03.send_request(params)

    def get_task_in(self, params: v03_pb2.GetTaskRequest) -> GetTaskRequest:
        [task_id, *_] = proto_v03.resource(params.name, "name")
        # proto int32: 0 (absent) means no limit in v0.3.
        return parse(
            GetTaskRequest, {"id": task_id, "historyLength": params.history_length or None}
        )

    def list_tasks_in(self, params: object) -> ListTasksRequest:
        raise UnsupportedOperationError("ListTasks is not an RPC of the v0.3 gRPC service")

    def cancel_task_in(self, params: v03_pb2.CancelTaskRequest) -> CancelTaskRequest:
        [task_id, *_] = proto_v03.resource(params.name, "name")
        return parse(CancelTaskRequest, {"id": task_id})

    def subscribe_in(self, params: v03_pb2.TaskSubscriptionRequest) -> SubscribeToTaskRequest:
        [task_id, *_] = proto_v03.resource(params.name, "name")
        return parse(SubscribeToTaskRequest, {"id": task_id})

    def push_config_in(
        self, params: v03_pb2.CreateTaskPushNotificationConfigRequest
    ) -> TaskPushNotificationConfig:
        return proto_v03.push_config(params)

    def push_config_ref_in(
        self,
        params: v03_pb2.GetTaskPushNotificationConfigRequest
        | v03_pb2.DeleteTaskPushNotificationConfigRequest
        | v03_pb2.ListTaskPushNotificationConfigRequest,
        *,
        need_id: bool,
    ) -> TaskPushConfigRequest:
        """List names the task in `parent`; get and delete name the config (delete needs its
        id; a get without one gets the task's config)."""
        if isinstance(params, v03_pb2.ListTaskPushNotificationConfigRequest):
            [task_id, *_] = proto_v03.resource(params.parent, "parent")
            return parse(TaskPushConfigRequest, {"taskId": task_id})
        ids = proto_v03.resource(params.name, "name")
        if isinstance(params, v03_pb2.DeleteTaskPushNotificationConfigRequest) and len(ids) < 2:
            raise InvalidParamsError(
                "name must be tasks/{id}/pushNotificationConfigs/{configId}",
                violations=[("name", "invalid")],
            )
        config_id = ids[1] if len(ids) > 1 else None
        return parse(TaskPushConfigRequest, {"taskId": ids[0], "id": config_id})

    def sent_out(self, outcome: Task | Message) -> Proto:
        return proto_v03.send_response(outcome)

    def task_out(self, task: Task) -> Proto:
        return proto_v03.task_out(task)

    def tasks_out(self, page: ListTasksResponse) -> Proto:
        raise UnsupportedOperationError("ListTasks is not an RPC of the v0.3 gRPC service")

    def events_out(
        self, events: AsyncIterable[StreamResponse], *, closes_at_interrupt: bool
    ) -> AsyncIterator[Proto]:
        return encoded(
            events, partial(proto_v03.event_out, closes_at_interrupt=closes_at_interrupt)
        )

    def push_config_out(self, config: TaskPushNotificationConfig) -> Proto:
        return proto_v03.push_config_out(config)

    def push_configs_out(
        self, configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
    ) -> Proto:
        """Every config: the v0.3 list has no pages."""
        out = v03_pb2.ListTaskPushNotificationConfigResponse()
        for config in configs:
            proto_v03.push_config_out(config, out.configs.add())
        return out

    def empty_out(self) -> Proto:
        return empty_pb2.Empty()

    def card_out(self, card: dict[str, Any]) -> Proto:
        return _card(v03_pb2.AgentCard, card)


V1 = V1ProtoCodec()
V03 = V03ProtoCodec()
