"""The v1.0 protobuf (`lf.a2a.v1`) <-> our v1 wire models, field by field.

Decoding reads each field the way ProtoJSON would present it (a proto3 scalar left at its
default is absent, an `optional` one is present when set, an enum is its name, or its number
when the name is unknown) into the model's input, and the model validates it once: bad input
gets the same InvalidParams, with the same field paths, as the JSON bindings give. Encoding
sets the response message's fields straight from the model.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from types import ModuleType
from typing import Any, ClassVar

from google.protobuf import struct_pb2, timestamp_pb2
from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper
from google.protobuf.message import Message as Proto

from core.bindings.grpc.protos import v1_pb2 as pb
from core.wire.codecs.codec import parse
from core.wire.enums import Role, TaskState
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushConfigRequest,
    TaskPushNotificationConfig,
    TaskStatus,
    TaskStatusUpdateEvent,
)

ROLES = {role: pb.Role.Value(role.value) for role in Role}
STATES = {state: pb.TaskState.Value(state.value) for state in TaskState}

# ----- JSON values (google.protobuf.Struct / Value) ---------------------------------------------


def value_in(value: struct_pb2.Value) -> Any:
    """A `Value` as JSON; a non-finite number has no JSON form and is refused."""
    kind = value.WhichOneof("kind")
    if kind == "string_value":
        return value.string_value
    if kind == "number_value":
        number = value.number_value
        if math.isinf(number) or math.isnan(number):
            raise InvalidParamsError(
                "Invalid params: numbers in JSON values (metadata, data) must be finite"
            )
        return number
    if kind == "bool_value":
        return value.bool_value
    if kind == "struct_value":
        return struct_in(value.struct_value)
    if kind == "list_value":
        return [value_in(item) for item in value.list_value.values]
    return None


def struct_in(struct: struct_pb2.Struct) -> dict[str, Any]:
    return {key: value_in(item) for key, item in struct.fields.items()}


def value_out(target: struct_pb2.Value, value: Any) -> None:
    if value is None:
        target.null_value = struct_pb2.NULL_VALUE
    elif isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int | float):
        target.number_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, Mapping):
        struct_out(target.struct_value, value)
    else:
        target.list_value.SetInParent()  # an empty list is still a list
        target.list_value.extend(value)


def struct_out(target: struct_pb2.Struct, value: Mapping[str, Any] | None) -> None:
    if value is not None:
        target.update(value)
        target.SetInParent()


def timestamp_out(target: timestamp_pb2.Timestamp, value: datetime | None) -> None:
    """RFC 3339 on the JSON bindings carries milliseconds: gRPC carries the same instant."""
    if value is not None:
        target.FromDatetime(value.replace(microsecond=value.microsecond // 1000 * 1000))


def enum_in(enum: EnumTypeWrapper, number: int) -> str | int:
    """ProtoJSON's enum: the name, or the bare number when the enum has no such value (the
    model refuses it then)."""
    try:
        return enum.Name(number)
    except ValueError:
        return number


def put(out: dict[str, Any], key: str, value: Any) -> None:
    """A proto3 field without presence: absent when it holds its default."""
    if value:
        out[key] = value


# ----- decoding -------------------------------------------------------------------------------


def part_in(part: pb.Part) -> dict[str, Any]:
    out: dict[str, Any] = {}
    content = part.WhichOneof("content")
    if content == "text":
        out["text"] = part.text
    elif content == "raw":
        out["raw"] = base64.b64encode(part.raw).decode("ascii")
    elif content == "url":
        out["url"] = part.url
    elif content == "data":
        out["data"] = value_in(part.data)
    if part.HasField("metadata"):
        out["metadata"] = struct_in(part.metadata)
    put(out, "filename", part.filename)
    put(out, "mediaType", part.media_type)
    return out


def message_in(message: pb.Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "messageId", message.message_id)
    put(out, "contextId", message.context_id)
    put(out, "taskId", message.task_id)
    if message.role:
        out["role"] = enum_in(pb.Role, message.role)
    if message.parts:
        out["parts"] = [part_in(p) for p in message.parts]
    if message.HasField("metadata"):
        out["metadata"] = struct_in(message.metadata)
    put(out, "extensions", list(message.extensions))
    put(out, "referenceTaskIds", list(message.reference_task_ids))
    return out


def push_config_in(config: pb.TaskPushNotificationConfig) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "tenant", config.tenant)
    put(out, "id", config.id)
    put(out, "taskId", config.task_id)
    put(out, "url", config.url)
    put(out, "token", config.token)
    if config.HasField("authentication"):
        auth: dict[str, Any] = {}
        put(auth, "scheme", config.authentication.scheme)
        put(auth, "credentials", config.authentication.credentials)
        out["authentication"] = auth
    return out


def send_request(request: pb.SendMessageRequest) -> SendMessageRequest:
    out: dict[str, Any] = {}
    put(out, "tenant", request.tenant)
    if request.HasField("message"):
        out["message"] = message_in(request.message)
    if request.HasField("configuration"):
        config = request.configuration
        v1: dict[str, Any] = {}
        put(v1, "acceptedOutputModes", list(config.accepted_output_modes))
        if config.HasField("task_push_notification_config"):
            v1["taskPushNotificationConfig"] = push_config_in(config.task_push_notification_config)
        if config.HasField("history_length"):
            v1["historyLength"] = config.history_length
        put(v1, "returnImmediately", config.return_immediately)
        out["configuration"] = v1
    if request.HasField("metadata"):
        out["metadata"] = struct_in(request.metadata)
    return parse(SendMessageRequest, out)


def get_task_request(request: pb.GetTaskRequest) -> GetTaskRequest:
    out: dict[str, Any] = {}
    put(out, "tenant", request.tenant)
    put(out, "id", request.id)
    if request.HasField("history_length"):
        out["historyLength"] = request.history_length
    return parse(GetTaskRequest, out)


def list_tasks_request(request: pb.ListTasksRequest) -> ListTasksRequest:
    out: dict[str, Any] = {}
    put(out, "tenant", request.tenant)
    put(out, "contextId", request.context_id)
    if request.status:
        out["status"] = enum_in(pb.TaskState, request.status)
    for field, key in (
        ("page_size", "pageSize"),
        ("history_length", "historyLength"),
        ("include_artifacts", "includeArtifacts"),
    ):
        if request.HasField(field):
            out[key] = getattr(request, field)
    put(out, "pageToken", request.page_token)
    if request.HasField("status_timestamp_after"):
        try:
            out["statusTimestampAfter"] = request.status_timestamp_after.ToJsonString()
        except ValueError as exc:  # seconds or nanos beyond what RFC 3339 can say
            raise InvalidParamsError(
                "Invalid params: statusTimestampAfter: not a valid timestamp",
                violations=[("statusTimestampAfter", "not a valid timestamp")],
            ) from exc
    return parse(ListTasksRequest, out)


def cancel_request(request: pb.CancelTaskRequest) -> CancelTaskRequest:
    out: dict[str, Any] = {}
    put(out, "tenant", request.tenant)
    put(out, "id", request.id)
    if request.HasField("metadata"):
        out["metadata"] = struct_in(request.metadata)
    return parse(CancelTaskRequest, out)


def subscribe_request(request: pb.SubscribeToTaskRequest) -> SubscribeToTaskRequest:
    out: dict[str, Any] = {}
    put(out, "tenant", request.tenant)
    put(out, "id", request.id)
    return parse(SubscribeToTaskRequest, out)


def push_config(request: pb.TaskPushNotificationConfig) -> TaskPushNotificationConfig:
    return parse(TaskPushNotificationConfig, push_config_in(request))


def push_config_request(
    request: pb.GetTaskPushNotificationConfigRequest
    | pb.DeleteTaskPushNotificationConfigRequest
    | pb.ListTaskPushNotificationConfigsRequest,
    *,
    need_id: bool,
) -> TaskPushConfigRequest:
    out: dict[str, Any] = {}
    put(out, "tenant", request.tenant)
    put(out, "taskId", request.task_id)
    if isinstance(request, pb.ListTaskPushNotificationConfigsRequest):
        put(out, "pageSize", request.page_size)
        put(out, "pageToken", request.page_token)
    else:
        put(out, "id", request.id)
    found = parse(TaskPushConfigRequest, out)
    if need_id and not found.id:
        raise InvalidParamsError("id is required", violations=[("id", "required")])
    return found


# ----- encoding -------------------------------------------------------------------------------


class Encoder:
    """Sets a v1 model's fields on the messages of a proto version. Both versions' `Task`,
    `Artifact`, `TaskStatus` and update events match field for field (enum numbers too); a
    version's subclass says what differs: how a part is written, and the names of a
    message's parts and of a status's message."""

    states: ClassVar[Mapping[TaskState, int]] = STATES
    message_parts = "parts"
    status_message = "message"
    references = True  # Message.reference_task_ids
    reply = "message"  # the member of SendMessageResponse and StreamResponse holding a Message
    protos: ClassVar[ModuleType] = pb

    def part(self, target: Any, part: Part) -> None:
        if part.text is not None:
            target.text = part.text
        elif part.raw is not None:
            target.raw = base64.b64decode(part.raw)
        elif part.url is not None:
            target.url = part.url
        else:
            value_out(target.data, part.data)
        struct_out(target.metadata, part.metadata)
        if part.filename is not None:
            target.filename = part.filename
        if part.media_type is not None:
            target.media_type = part.media_type

    def parts(self, target: Any, parts: Sequence[Part]) -> None:
        for part in parts:
            self.part(target.add(), part)

    def message(self, target: Any, message: Message) -> None:
        target.message_id = message.message_id
        if message.context_id is not None:
            target.context_id = message.context_id
        if message.task_id is not None:
            target.task_id = message.task_id
        target.role = ROLES[message.role]  # UNSPECIFIED is 0: left out
        self.parts(getattr(target, self.message_parts), message.parts)
        struct_out(target.metadata, message.metadata)
        target.extensions.extend(message.extensions or ())
        if self.references and message.reference_task_ids:
            target.reference_task_ids.extend(message.reference_task_ids)

    def status(self, target: Any, status: TaskStatus) -> None:
        target.state = self.states[status.state]
        if status.message is not None:
            self.message(getattr(target, self.status_message), status.message)
        timestamp_out(target.timestamp, status.timestamp)

    def artifact(self, target: Any, artifact: Artifact) -> None:
        target.artifact_id = artifact.artifact_id
        if artifact.name is not None:
            target.name = artifact.name
        if artifact.description is not None:
            target.description = artifact.description
        self.parts(target.parts, artifact.parts)
        struct_out(target.metadata, artifact.metadata)
        target.extensions.extend(artifact.extensions or ())

    def task(self, target: Any, task: Task) -> None:
        target.id = task.id
        target.context_id = task.context_id
        self.status(target.status, task.status)
        for artifact in task.artifacts or ():
            self.artifact(target.artifacts.add(), artifact)
        for message in task.history or ():
            self.message(target.history.add(), message)
        struct_out(target.metadata, task.metadata)

    def status_update(self, target: Any, event: TaskStatusUpdateEvent) -> None:
        target.task_id = event.task_id
        target.context_id = event.context_id
        self.status(target.status, event.status)
        struct_out(target.metadata, event.metadata)

    def artifact_update(self, target: Any, event: TaskArtifactUpdateEvent) -> None:
        target.task_id = event.task_id
        target.context_id = event.context_id
        self.artifact(target.artifact, event.artifact)
        target.append = bool(event.append)
        target.last_chunk = bool(event.last_chunk)

    def task_out(self, task: Task) -> Proto:
        out: Proto = self.protos.Task()
        self.task(out, task)
        return out

    def send_response(self, outcome: Task | Message) -> Proto:
        response = self.protos.SendMessageResponse()
        if isinstance(outcome, Message):
            self.message(getattr(response, self.reply), outcome)
        else:
            self.task(response.task, outcome)
        sent: Proto = response
        return sent

    def event(self, event: StreamResponse) -> Any:
        out = self.protos.StreamResponse()
        if event.task is not None:
            self.task(out.task, event.task)
        elif event.message is not None:
            self.message(getattr(out, self.reply), event.message)
        elif event.status_update is not None:
            self.status_update(out.status_update, event.status_update)
        elif event.artifact_update is not None:
            self.artifact_update(out.artifact_update, event.artifact_update)
        return out


ENCODER = Encoder()
task_out = ENCODER.task_out
send_response = ENCODER.send_response


def event_out(event: StreamResponse) -> pb.StreamResponse:
    out: pb.StreamResponse = ENCODER.event(event)
    if event.artifact_update is not None:
        struct_out(out.artifact_update.metadata, event.artifact_update.metadata)
    return out


def task_list_out(result: ListTasksResponse) -> pb.ListTasksResponse:
    out = pb.ListTasksResponse(
        next_page_token=result.next_page_token,
        page_size=result.page_size,
        total_size=result.total_size,
    )
    for task in result.tasks:
        ENCODER.task(out.tasks.add(), task)
    return out


def push_config_out(
    config: TaskPushNotificationConfig, target: pb.TaskPushNotificationConfig | None = None
) -> pb.TaskPushNotificationConfig:
    out = pb.TaskPushNotificationConfig() if target is None else target
    for field in ("tenant", "id", "task_id", "token"):
        value = getattr(config, field)
        if value is not None:
            setattr(out, field, value)
    out.url = config.url
    if config.authentication is not None:
        out.authentication.scheme = config.authentication.scheme
        if config.authentication.credentials is not None:
            out.authentication.credentials = config.authentication.credentials
    return out
