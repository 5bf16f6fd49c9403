"""v0.3 HTTP+JSON codec: ProtoJSON of the v0.3 proto (`content`, `TASK_STATE_CANCELLED`).

Input is lenient (a2a-protocol.md §0): the proto's JSON names or field names (snake_case), the
resource-name forms (`tasks/{id}`), and JSON-RPC-shaped messages (`parts`, `kind`, `role:"user"`)
are all accepted. Output follows the reference SDK.
"""

from __future__ import annotations

from typing import Any

from core.wire import v03
from core.wire.base import format_timestamp
from core.wire.enums import Role, TaskState
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskPushNotificationConfig,
    TaskStatus,
)

CANCELLED = "TASK_STATE_CANCELLED"


def _get(source: dict[str, Any], camel: str, snake: str) -> Any:
    return source[camel] if camel in source else source.get(snake)


def strip_resource(name: str, collection: str = "tasks") -> str:
    prefix = f"{collection}/"
    return name[len(prefix) :] if name.startswith(prefix) else name


# ----- decoding -------------------------------------------------------------------------------


def _part_in(part: Any) -> Any:
    if not isinstance(part, dict) or "kind" in part:
        return part
    file = part.get("file")
    if isinstance(file, dict) and not ({"bytes", "uri"} & file.keys()):
        converted: dict[str, Any] = {}
        for camel, snake, key in (
            ("fileWithBytes", "file_with_bytes", "bytes"),
            ("fileWithUri", "file_with_uri", "uri"),
            ("mimeType", "mime_type", "mimeType"),
            ("name", "name", "name"),
        ):
            value = _get(file, camel, snake)
            if value is not None:
                converted[key] = value
        return {**part, "kind": "file", "file": converted}
    data = part.get("data")
    if isinstance(data, dict) and set(data) == {"data"}:
        return {**part, "kind": "data", "data": data["data"]}
    return part


def message_in(message: Any) -> Any:
    if not isinstance(message, dict):
        return message
    out: dict[str, Any] = {}
    for camel, snake in (
        ("messageId", "message_id"),
        ("contextId", "context_id"),
        ("taskId", "task_id"),
        ("metadata", "metadata"),
        ("extensions", "extensions"),
        ("referenceTaskIds", "reference_task_ids"),
    ):
        value = _get(message, camel, snake)
        if value is not None:
            out[camel] = value
    role = message.get("role")
    if role is not None:
        out["role"] = role
    parts = message["content"] if "content" in message else message.get("parts")
    if isinstance(parts, list):
        out["parts"] = [_part_in(p) for p in parts]
    elif parts is not None:
        out["parts"] = parts
    return v03.message_in(out)


def send_body_in(body: dict[str, Any]) -> dict[str, Any]:
    """v0.3 REST `SendMessageRequest` (or a JSON-RPC `MessageSendParams`) -> v1 dict."""
    message = body["message"] if "message" in body else body.get("request")
    params: dict[str, Any] = {"message": message_in(message)}
    if "metadata" in body:
        params["metadata"] = body["metadata"]
    config = body.get("configuration")
    if isinstance(config, dict):
        v1: dict[str, Any] = {}
        modes = _get(config, "acceptedOutputModes", "accepted_output_modes")
        if modes is not None:
            v1["acceptedOutputModes"] = modes
        history = _get(config, "historyLength", "history_length")
        if history is not None and history != 0:  # proto int32: 0 means "no limit"
            v1["historyLength"] = history
        # A proto bool: a configuration that leaves `blocking` out means non-blocking.
        if not config.get("blocking", False):
            v1["returnImmediately"] = True
        push = _get(config, "pushNotification", "push_notification")
        if push is not None:
            v1["taskPushNotificationConfig"] = v03.push_config_in(push)
        params["configuration"] = v1
    elif config is not None:
        params["configuration"] = config
    return params


def push_config_body_in(body: dict[str, Any], task_id: str) -> dict[str, Any]:
    """`POST /v1/tasks/{id}/pushNotificationConfigs`: the reference client's
    `{parent, configId, config: {name, pushNotificationConfig}}`, or the bare config
    `{name?, pushNotificationConfig}` -> v1 `TaskPushNotificationConfig` dict."""
    wrapped = body.get("config")
    source = wrapped if isinstance(wrapped, dict) else body
    config = _get(source, "pushNotificationConfig", "push_notification_config")
    if not isinstance(config, dict):
        raise InvalidParamsError(
            "pushNotificationConfig is required",
            violations=[("pushNotificationConfig", "required")],
        )
    config_id = _get(body, "configId", "config_id")
    if config_id and not config.get("id"):
        config = {**config, "id": config_id}
    converted: dict[str, Any] = v03.push_config_in(config, task_id)
    return converted


def push_config_out(config: TaskPushNotificationConfig) -> dict[str, Any]:
    return {
        "name": f"tasks/{config.task_id}/pushNotificationConfigs/{config.id}",
        "pushNotificationConfig": v03.push_config_out(config),
    }


# ----- encoding -------------------------------------------------------------------------------


def state_out(state: TaskState) -> str:
    return CANCELLED if state is TaskState.CANCELED else state.value


def part_out(part: Part) -> dict[str, Any]:
    out: dict[str, Any]
    if part.text is not None:
        out = {"text": part.text}
    elif part.raw is not None or part.url is not None:
        file: dict[str, Any] = (
            {"fileWithBytes": part.raw} if part.raw is not None else {"fileWithUri": part.url}
        )
        if part.media_type is not None:
            file["mimeType"] = part.media_type
        if part.filename is not None:
            file["name"] = part.filename
        out = {"file": file}
    else:
        data = part.data if isinstance(part.data, dict) else {"value": part.data}
        out = {"data": {"data": data}}
    if part.metadata:
        out["metadata"] = part.metadata
    return out


def message_out(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"messageId": message.message_id}
    if message.context_id is not None:
        out["contextId"] = message.context_id
    if message.task_id is not None:
        out["taskId"] = message.task_id
    out["role"] = message.role.value if message.role is not Role.UNSPECIFIED else None
    out["content"] = [part_out(p) for p in message.parts]
    if message.metadata is not None:
        out["metadata"] = message.metadata
    if message.extensions:
        out["extensions"] = message.extensions
    return {k: v for k, v in out.items() if v is not None}


def status_out(status: TaskStatus) -> dict[str, Any]:
    out: dict[str, Any] = {"state": state_out(status.state)}
    if status.message is not None:
        out["message"] = message_out(status.message)
    if status.timestamp is not None:
        out["timestamp"] = format_timestamp(status.timestamp)
    return out


def artifact_out(artifact: Artifact) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactId": artifact.artifact_id}
    if artifact.name is not None:
        out["name"] = artifact.name
    if artifact.description is not None:
        out["description"] = artifact.description
    out["parts"] = [part_out(p) for p in artifact.parts]
    if artifact.metadata is not None:
        out["metadata"] = artifact.metadata
    if artifact.extensions:
        out["extensions"] = artifact.extensions
    return out


def task_out(task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": task.id,
        "contextId": task.context_id,
        "status": status_out(task.status),
    }
    if task.artifacts is not None:
        out["artifacts"] = [artifact_out(a) for a in task.artifacts]
    if task.history is not None:
        out["history"] = [message_out(m) for m in task.history]
    if task.metadata is not None:
        out["metadata"] = task.metadata
    return out


def event_out(event: StreamResponse, *, closes_at_interrupt: bool) -> dict[str, Any]:
    if event.task is not None:
        return {"task": task_out(event.task)}
    if event.message is not None:
        return {"message": message_out(event.message)}
    if event.status_update is not None:
        update = event.status_update
        status: dict[str, Any] = {
            "taskId": update.task_id,
            "contextId": update.context_id,
            "status": status_out(update.status),
            "final": v03.is_final(update.status.state, closes_at_interrupt=closes_at_interrupt),
        }
        if update.metadata is not None:
            status["metadata"] = update.metadata
        return {"statusUpdate": status}
    artifact_update = event.artifact_update
    if artifact_update is None:
        raise ValueError("empty StreamResponse")
    out: dict[str, Any] = {
        "taskId": artifact_update.task_id,
        "contextId": artifact_update.context_id,
        "artifact": artifact_out(artifact_update.artifact),
    }
    if artifact_update.append:
        out["append"] = True
    if artifact_update.last_chunk:
        out["lastChunk"] = True
    return {"artifactUpdate": out}
