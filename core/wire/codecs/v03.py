"""The v0.3 codec, in either of v0.3's JSON shapes (`v03_in.Shape`).

JSON-RPC: `kind` discriminators, lowercase enums (`canceled`, `input-required`), results as
they are. ProtoJSON (the v0.3 proto's JSON, which HTTP+JSON carries): `content`, proto enum
names (`ROLE_USER`, `TASK_STATE_CANCELLED`), file and data parts in their oneof wrappers,
results and events wrapped in their oneof member (`{"task": ...}`), push configs named by
resource (`tasks/{id}/pushNotificationConfigs/{configId}`). Both put `final` on status events.
Errors are the v0.3 JSON-RPC error, or the v1.0 `google.rpc.Status` (as the reference SDK's
compat layer answers) plus the error's type name at the top level for v0.3 REST clients.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from functools import partial
from typing import Any

from core.wire.base import format_timestamp
from core.wire.codecs.codec import Out, Params, encoded, parse
from core.wire.codecs.v03_in import DATA_COMPAT_KEY, Shape, strip_resource
from core.wire.codecs.v03_in import send_in as _send_in
from core.wire.codecs.v03_in import task_push_config_in as _push_config_in
from core.wire.enums import Role, TaskState
from core.wire.errors import (
    DaemonError,
    Dialect,
    InvalidParamsError,
    jsonrpc_error,
    protocol_name,
    rest_error,
)
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
    TaskPushConfigRequest,
    TaskPushNotificationConfig,
    TaskStatus,
)
from core.wire.versions import V0_3

ROLE_OUT = {Role.USER: "user", Role.AGENT: "agent", Role.UNSPECIFIED: "unknown"}
PROTO_CANCELLED = "TASK_STATE_CANCELLED"


def is_final(state: TaskState, *, closes_at_interrupt: bool) -> bool:
    """v0.3 `final`: true on the status event after which the server closes the stream."""
    return state.terminal or (closes_at_interrupt and state.interrupted)


class V03Codec:
    version = V0_3
    dialect: Dialect = "0.3"
    push_field = "pushNotificationConfig"
    card_strict = False
    card_public_merged = False

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.proto = shape is Shape.PROTO
        # The v0.3 SDK ignored the config id of a JSON-RPC get; v0.3 clients rely on that.
        self.lenient_push_config_id = not self.proto
        # `GET /v1/card` answers the public card when there is no extended one.
        self.card_public_fallback = self.proto
        # v0.3 JSON-RPC clients read every error of a streaming method from the stream.
        self.errors_in_stream = not self.proto
        self.error_event: str | None = "error" if self.proto else None

    # ----- decoding ---------------------------------------------------------------------------

    def send_in(self, params: Params) -> SendMessageRequest:
        return parse(SendMessageRequest, _send_in(params, self.shape))

    def _history_length(self, params: Params) -> Any:
        # proto int32: 0 (or absent) means no limit.
        return params.get("historyLength") or params.get("history_length") or None

    def get_task_in(self, params: Params) -> GetTaskRequest:
        if self.proto:
            params = {"id": params.get("id"), "historyLength": self._history_length(params)}
        return parse(GetTaskRequest, params)

    def list_tasks_in(self, params: Params) -> ListTasksRequest:
        request: dict[str, Any] = {"historyLength": self._history_length(params)}
        if params.get("contextId"):
            request["contextId"] = params["contextId"]
        return parse(ListTasksRequest, request)

    def cancel_task_in(self, params: Params) -> CancelTaskRequest:
        # The v0.3 proto's CancelTaskRequest carries nothing but the task's name.
        return parse(CancelTaskRequest, {"id": params.get("id")} if self.proto else params)

    def subscribe_in(self, params: Params) -> SubscribeToTaskRequest:
        return parse(SubscribeToTaskRequest, params)

    def push_config_in(self, params: Params) -> TaskPushNotificationConfig:
        return parse(TaskPushNotificationConfig, _push_config_in(params, self.shape))

    def push_config_ref_in(self, params: Params, *, need_id: bool) -> TaskPushConfigRequest:
        """JSON-RPC names the task `id` and the config `pushNotificationConfigId`; a REST
        route's path gives `taskId` and `id` (a resource name or the bare config id)."""
        if self.proto:
            config_id = params.get("id")
            if config_id is not None:
                config_id = strip_resource(config_id, "pushNotificationConfigs")
            return parse(TaskPushConfigRequest, {"taskId": params.get("taskId"), "id": config_id})
        task_id = params.get("id")
        if not isinstance(task_id, str) or not task_id:
            raise InvalidParamsError(
                "id (the task id) is required", violations=[("id", "required")]
            )
        config_id = params.get("pushNotificationConfigId")
        if config_id is not None and not isinstance(config_id, str):
            raise InvalidParamsError(
                "pushNotificationConfigId must be a string",
                violations=[("pushNotificationConfigId", "must be a string")],
            )
        if need_id and not config_id:
            raise InvalidParamsError(
                "pushNotificationConfigId is required",
                violations=[("pushNotificationConfigId", "required")],
            )
        return parse(TaskPushConfigRequest, {"taskId": task_id, "id": config_id or None})

    # ----- encoding ---------------------------------------------------------------------------

    def state_out(self, state: TaskState) -> str:
        if self.proto:
            return PROTO_CANCELLED if state is TaskState.CANCELED else state.value
        if state is TaskState.UNSPECIFIED:
            return "unknown"
        return state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")

    def part_out(self, part: Part) -> dict[str, Any]:
        out: dict[str, Any]
        metadata = part.metadata
        if part.text is not None:
            out = {"text": part.text}
        elif part.raw is not None or part.url is not None:
            names = ("fileWithBytes", "fileWithUri") if self.proto else ("bytes", "uri")
            file: dict[str, Any] = (
                {names[0]: part.raw} if part.raw is not None else {names[1]: part.url}
            )
            if part.filename is not None:
                file["name"] = part.filename
            if part.media_type is not None:
                file["mimeType"] = part.media_type
            out = {"file": file}
        else:
            data = part.data if isinstance(part.data, dict) else {"value": part.data}
            if self.proto:
                out = {"data": {"data": data}}
            else:
                out = {"data": data}
                if data is not part.data:
                    # Tells a v0.3 reader (ours) that `value` wraps a non-object value.
                    metadata = {**(metadata or {}), DATA_COMPAT_KEY: True}
        if not self.proto:
            out = {"kind": next(iter(out)), **out}
        if metadata:
            out["metadata"] = dict(metadata)
        return out

    def _extras(self, source: Message | Artifact, out: dict[str, Any]) -> dict[str, Any]:
        if source.metadata is not None:
            out["metadata"] = source.metadata
        # ProtoJSON leaves an empty repeated field out.
        if source.extensions if self.proto else source.extensions is not None:
            out["extensions"] = source.extensions
        return out

    def message_out(self, message: Message) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.proto else {"kind": "message"}
        out["messageId"] = message.message_id
        if message.context_id is not None:
            out["contextId"] = message.context_id
        if message.task_id is not None:
            out["taskId"] = message.task_id
        if not self.proto:
            out["role"] = ROLE_OUT[message.role]
        elif message.role is not Role.UNSPECIFIED:
            out["role"] = message.role.value
        out["content" if self.proto else "parts"] = [self.part_out(p) for p in message.parts]
        self._extras(message, out)
        # The v0.3 proto's Message has no reference_task_ids.
        if not self.proto and message.reference_task_ids is not None:
            out["referenceTaskIds"] = message.reference_task_ids
        return out

    def status_out(self, status: TaskStatus) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state_out(status.state)}
        if status.message is not None:
            out["message"] = self.message_out(status.message)
        if status.timestamp is not None:
            out["timestamp"] = format_timestamp(status.timestamp)
        return out

    def artifact_out(self, artifact: Artifact) -> dict[str, Any]:
        out: dict[str, Any] = {"artifactId": artifact.artifact_id}
        if artifact.name is not None:
            out["name"] = artifact.name
        if artifact.description is not None:
            out["description"] = artifact.description
        out["parts"] = [self.part_out(p) for p in artifact.parts]
        return self._extras(artifact, out)

    def task_out(self, task: Task) -> dict[str, Any]:
        out: dict[str, Any] = {} if self.proto else {"kind": "task"}
        out["id"] = task.id
        out["contextId"] = task.context_id
        out["status"] = self.status_out(task.status)
        if task.artifacts is not None:
            out["artifacts"] = [self.artifact_out(a) for a in task.artifacts]
        if task.history is not None:
            out["history"] = [self.message_out(m) for m in task.history]
        if task.metadata is not None:
            out["metadata"] = task.metadata
        return out

    def _member(self, member: str, kind: str, body: dict[str, Any]) -> dict[str, Any]:
        """A oneof result: ProtoJSON wraps it in its member, JSON-RPC tags it with its kind
        (a task's and a message's own encoding already carry it)."""
        if self.proto:
            return {member: body}
        return body if "kind" in body else {"kind": kind, **body}

    def sent_out(self, outcome: Task | Message) -> Out:
        if isinstance(outcome, Message):
            return self._member("message", "message", self.message_out(outcome))
        return self._member("task", "task", self.task_out(outcome))

    def tasks_out(self, page: ListTasksResponse) -> Out:
        return [self.task_out(t) for t in page.tasks]

    def event_out(self, event: StreamResponse, *, closes_at_interrupt: bool) -> dict[str, Any]:
        if event.task is not None:
            return self._member("task", "task", self.task_out(event.task))
        if event.message is not None:
            return self._member("message", "message", self.message_out(event.message))
        if event.status_update is not None:
            update = event.status_update
            status: dict[str, Any] = {
                "taskId": update.task_id,
                "contextId": update.context_id,
                "status": self.status_out(update.status),
                "final": is_final(update.status.state, closes_at_interrupt=closes_at_interrupt),
            }
            if update.metadata is not None:
                status["metadata"] = update.metadata
            return self._member("statusUpdate", "status-update", status)
        artifact = event.artifact_update
        if artifact is None:
            raise ValueError("empty StreamResponse")
        out: dict[str, Any] = {
            "taskId": artifact.task_id,
            "contextId": artifact.context_id,
            "artifact": self.artifact_out(artifact.artifact),
        }
        # ProtoJSON leaves a false bool out, and the v0.3 proto's event has no metadata.
        for name, value in (("append", artifact.append), ("lastChunk", artifact.last_chunk)):
            if value if self.proto else value is not None:
                out[name] = value
        if not self.proto and artifact.metadata is not None:
            out["metadata"] = artifact.metadata
        return self._member("artifactUpdate", "artifact-update", out)

    def events_out(
        self, events: AsyncIterable[StreamResponse], *, closes_at_interrupt: bool
    ) -> AsyncIterator[dict[str, Any]]:
        return encoded(events, partial(self.event_out, closes_at_interrupt=closes_at_interrupt))

    def _push_config_body(self, config: TaskPushNotificationConfig) -> dict[str, Any]:
        """v1 config -> v0.3 `PushNotificationConfig` (without the task id)."""
        out: dict[str, Any] = {"id": config.id, "url": config.url}
        if config.token is not None:
            out["token"] = config.token
        if config.authentication is not None:
            auth: dict[str, Any] = {"schemes": [config.authentication.scheme]}
            if config.authentication.credentials is not None:
                auth["credentials"] = config.authentication.credentials
            out["authentication"] = auth
        return out

    def push_config_out(self, config: TaskPushNotificationConfig) -> dict[str, Any]:
        if self.proto:
            name = f"tasks/{config.task_id}/pushNotificationConfigs/{config.id}"
            return {"name": name, "pushNotificationConfig": self._push_config_body(config)}
        return {"taskId": config.task_id, "pushNotificationConfig": self._push_config_body(config)}

    def push_configs_out(
        self, configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
    ) -> Out:
        encoded_configs = [self.push_config_out(c) for c in configs]
        return {"configs": encoded_configs} if self.proto else encoded_configs

    def empty_out(self) -> Out:
        return None

    def card_out(self, card: dict[str, Any]) -> Out:
        return card

    def rpc_error(self, error: DaemonError) -> dict[str, Any]:
        return jsonrpc_error(error, "0.3")

    def rest_error(self, error: DaemonError) -> tuple[int, dict[str, Any]]:
        status, body = rest_error(error)
        return status, {**body, "type": protocol_name(error), "message": error.message}


JSONRPC = V03Codec(Shape.JSONRPC)
PROTO = V03Codec(Shape.PROTO)
