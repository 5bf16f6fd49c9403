"""The v0.3 protobuf (`a2a.v1` of the v0.3 proto) <-> our v1 wire models, field by field.

The v0.3 rules are the v0.3 HTTP+JSON codec's (`core.wire.codecs.v03.PROTO`, the ProtoJSON of
this proto): `content` holds a message's parts, a file part's bytes or URI sit in `FilePart`,
a data part's object in `DataPart`, `TASK_STATE_CANCELLED` is spelt with two Ls, resources
are named `tasks/{id}[/pushNotificationConfigs/{configId}]`, and `final` marks the status
event after which the stream closes. Bad input gets the errors that codec gives.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from types import ModuleType
from typing import Any, ClassVar

from core.bindings.grpc import proto_v1
from core.bindings.grpc.proto_v1 import enum_in, put, struct_in, struct_out
from core.bindings.grpc.protos import v03_pb2 as pb
from core.wire.codecs.codec import parse
from core.wire.codecs.v03 import is_final
from core.wire.codecs.v03_in import DATA_COMPAT_KEY
from core.wire.enums import TaskState
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    Part,
    SendMessageRequest,
    StreamResponse,
    TaskPushNotificationConfig,
)

# ----- decoding -------------------------------------------------------------------------------


def _missing(field: str, why: str) -> InvalidParamsError:
    """A part without content could be stored but never read back."""
    return InvalidParamsError(f"Invalid params: {field}: {why}", violations=[(field, why)])


def resource(name: str, key: str) -> list[str]:
    """`tasks/{id}[/pushNotificationConfigs[/{configId}]]` -> [id, configId?]."""
    pieces = name.split("/") if name else []
    if len(pieces) < 2 or pieces[0] != "tasks" or not pieces[1]:
        raise InvalidParamsError(
            f"{key} must be a resource name like tasks/{{id}}", violations=[(key, "invalid")]
        )
    return [pieces[1], *pieces[3:4]]


def part_in(part: pb.Part, where: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if part.HasField("metadata"):
        out["metadata"] = struct_in(part.metadata)
    kind = part.WhichOneof("part")
    if kind == "text":
        out["text"] = part.text
    elif kind == "file":
        file = part.file
        which = file.WhichOneof("file")
        if which == "file_with_bytes":
            out["raw"] = base64.b64encode(file.file_with_bytes).decode("ascii")
        elif which == "file_with_uri":
            out["url"] = file.file_with_uri
        else:
            raise _missing(f"{where}.file", "a file part needs its bytes or its uri")
        put(out, "filename", file.name)
        put(out, "mediaType", file.mime_type)
    elif kind == "data":
        data: Any = struct_in(part.data.data)
        metadata = out.get("metadata")
        if isinstance(metadata, dict) and metadata.get(DATA_COMPAT_KEY):
            data = data.get("value")
        if data is None:
            raise _missing(f"{where}.data", "a data part needs a value other than null")
        out["data"] = data
    else:
        raise InvalidParamsError(
            "Unsupported part kind None", violations=[(f"{where}.kind", "unsupported kind")]
        )
    return out


def message_in(message: pb.Message) -> dict[str, Any]:
    out: dict[str, Any] = {}
    put(out, "messageId", message.message_id)
    put(out, "contextId", message.context_id)
    put(out, "taskId", message.task_id)
    if message.HasField("metadata"):
        out["metadata"] = struct_in(message.metadata)
    put(out, "extensions", list(message.extensions))
    if message.role:
        out["role"] = enum_in(pb.Role, message.role)
    if message.content:
        out["parts"] = [
            part_in(part, f"message.parts.{i}") for i, part in enumerate(message.content)
        ]
    return out


def push_config_in(config: pb.PushNotificationConfig, task_id: str | None) -> dict[str, Any]:
    """v0.3 `PushNotificationConfig` -> v1 flat config: the first of
    `authentication.schemes` becomes `authentication.scheme`."""
    out: dict[str, Any] = {}
    put(out, "id", config.id)
    put(out, "url", config.url)
    put(out, "token", config.token)
    if task_id is not None:
        out["taskId"] = task_id
    if config.HasField("authentication"):
        auth = config.authentication
        if not auth.schemes:
            raise InvalidParamsError(
                "authentication.schemes must name at least one scheme",
                violations=[("pushNotificationConfig.authentication.schemes", "required")],
            )
        out["authentication"] = {"scheme": auth.schemes[0]}
        put(out["authentication"], "credentials", auth.credentials)
    return out


def send_request(request: pb.SendMessageRequest) -> SendMessageRequest:
    out: dict[str, Any] = {
        "message": message_in(request.request) if request.HasField("request") else None
    }
    if request.HasField("metadata"):
        out["metadata"] = struct_in(request.metadata)
    if request.HasField("configuration"):
        config = request.configuration
        v1: dict[str, Any] = {}
        put(v1, "acceptedOutputModes", list(config.accepted_output_modes))
        put(v1, "historyLength", config.history_length)  # proto int32: 0 means "no limit"
        # A proto bool: a configuration that leaves `blocking` out means non-blocking.
        if not config.blocking:
            v1["returnImmediately"] = True
        if config.HasField("push_notification"):
            v1["taskPushNotificationConfig"] = push_config_in(config.push_notification, None)
        out["configuration"] = v1
    return parse(SendMessageRequest, out)


def push_config(request: pb.CreateTaskPushNotificationConfigRequest) -> TaskPushNotificationConfig:
    """The reference client's `{parent, configId, config: {name, pushNotificationConfig}}`."""
    [task_id, *_] = resource(request.parent, "parent")
    if not request.config.HasField("push_notification_config"):
        raise InvalidParamsError(
            "pushNotificationConfig is required",
            violations=[("pushNotificationConfig", "required")],
        )
    config = push_config_in(request.config.push_notification_config, task_id)
    if request.config_id and "id" not in config:
        config["id"] = request.config_id
    return parse(TaskPushNotificationConfig, config)


# ----- encoding -------------------------------------------------------------------------------


class Encoder(proto_v1.Encoder):
    """v0.3 spells CANCELLED with two Ls, holds a message's parts in `content` and a
    status's message in `update`, has no reference task ids, and writes a file or a data
    part in its own message."""

    states: ClassVar[Mapping[TaskState, int]] = {
        state: pb.TaskState.Value(
            "TASK_STATE_CANCELLED" if state is TaskState.CANCELED else state.value
        )
        for state in TaskState
    }
    message_parts = "content"
    status_message = "update"
    references = False
    reply = "msg"
    protos: ClassVar[ModuleType] = pb

    def part(self, target: Any, part: Part) -> None:
        if part.text is not None:
            target.text = part.text
        elif part.raw is not None or part.url is not None:
            file = target.file
            if part.raw is not None:
                file.file_with_bytes = base64.b64decode(part.raw)
            else:
                file.file_with_uri = part.url or ""
            if part.media_type is not None:
                file.mime_type = part.media_type
            if part.filename is not None:
                file.name = part.filename
        else:
            data = part.data if isinstance(part.data, dict) else {"value": part.data}
            struct_out(target.data.data, data)
        if part.metadata:
            struct_out(target.metadata, part.metadata)


ENCODER = Encoder()
task_out = ENCODER.task_out
send_response = ENCODER.send_response


def event_out(event: StreamResponse, *, closes_at_interrupt: bool) -> pb.StreamResponse:
    """As the v0.3 ProtoJSON codec sends it: `final` on the status event after which the stream
    closes, and an artifact update without its metadata."""
    out: pb.StreamResponse = ENCODER.event(event)
    if event.status_update is not None:
        state = event.status_update.status.state
        out.status_update.final = is_final(state, closes_at_interrupt=closes_at_interrupt)
    return out


def push_config_out(
    config: TaskPushNotificationConfig, target: pb.TaskPushNotificationConfig | None = None
) -> pb.TaskPushNotificationConfig:
    out = pb.TaskPushNotificationConfig() if target is None else target
    out.name = f"tasks/{config.task_id}/pushNotificationConfigs/{config.id}"
    push = out.push_notification_config
    push.id = config.id or ""
    push.url = config.url
    if config.token is not None:
        push.token = config.token
    if config.authentication is not None:
        push.authentication.schemes.append(config.authentication.scheme)
        if config.authentication.credentials is not None:
            push.authentication.credentials = config.authentication.credentials
    return out
