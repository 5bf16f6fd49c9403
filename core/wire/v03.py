"""v0.3 JSON-RPC codec: `kind` discriminators, lowercase enums, `final` on status events.

Decoding turns v0.3 shapes into v1-shaped dicts that the canonical v1 models then validate, so
every rule lives once (in models.py). Encoding renders v1 models as v0.3 JSON.
"""

from __future__ import annotations

from typing import Any

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

ROLE_IN = {"user": Role.USER.value, "agent": Role.AGENT.value}
ROLE_OUT = {Role.USER: "user", Role.AGENT: "agent", Role.UNSPECIFIED: "unknown"}
DATA_COMPAT_KEY = "data_part_compat"


def state_out(state: TaskState) -> str:
    if state is TaskState.UNSPECIFIED:
        return "unknown"
    return state.value.removeprefix("TASK_STATE_").lower().replace("_", "-")


STATE_IN = {state_out(s): s.value for s in TaskState}


# ----- decoding -------------------------------------------------------------------------------


def _part_in(part: Any, where: str) -> Any:
    if not isinstance(part, dict):
        return part
    # `type` is the v0.2 discriminator: an explicit unknown one is rejected, never guessed.
    kind = part.get("kind", part.get("type"))
    common = {k: part[k] for k in ("metadata",) if k in part}
    if kind is None:
        kind = next((k for k in ("text", "file", "data") if k in part), None)
    match kind:
        case "text":
            if part.get("text") is None:
                raise _missing(f"{where}.text", "a text part needs its text")
            return {"text": part["text"], **common}
        case "file":
            return _file_in(part.get("file"), common, where)
        case "data":
            data = part.get("data")
            metadata = common.get("metadata")
            if (
                isinstance(metadata, dict)
                and metadata.get(DATA_COMPAT_KEY)
                and isinstance(data, dict)
            ):
                data = data.get("value")
            if data is None:
                raise _missing(f"{where}.data", "a data part needs a value other than null")
            return {"data": data, **common}
    raise InvalidParamsError(
        f"Unsupported part kind {kind!r}", violations=[(f"{where}.kind", "unsupported kind")]
    )


def _file_in(file: Any, common: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(file, dict):
        raise _missing(f"{where}.file", f"{where}.file must be an object")
    out: dict[str, Any] = dict(common)
    if file.get("bytes") is not None:
        out["raw"] = file["bytes"]
    if file.get("uri") is not None:
        out["url"] = file["uri"]
    if "raw" not in out and "url" not in out:
        raise _missing(f"{where}.file", "a file part needs its bytes or its uri")
    for src, dst in (("name", "filename"), ("mimeType", "mediaType")):
        if file.get(src) is not None:
            out[dst] = file[src]
    return out


def _missing(field: str, why: str) -> InvalidParamsError:
    """A part without content (absent or null) could be stored but never read back."""
    return InvalidParamsError(f"Invalid params: {field}: {why}", violations=[(field, why)])


def message_in(message: Any, where: str = "message") -> Any:
    if not isinstance(message, dict):
        return message
    out = {k: v for k, v in message.items() if k not in ("kind", "role", "parts")}
    if "role" in message:
        role = message["role"]
        out["role"] = ROLE_IN.get(role, role) if isinstance(role, str) else role
    parts = message.get("parts")
    if isinstance(parts, list):
        out["parts"] = [_part_in(p, f"{where}.parts.{i}") for i, p in enumerate(parts)]
    elif "parts" in message:
        out["parts"] = parts
    return out


def send_params_in(params: dict[str, Any]) -> dict[str, Any]:
    """`MessageSendParams` -> v1 `SendMessageRequest` dict."""
    out: dict[str, Any] = {"message": message_in(params.get("message"))}
    if "metadata" in params:
        out["metadata"] = params["metadata"]
    config = params.get("configuration")
    if isinstance(config, dict):
        v1: dict[str, Any] = {}
        for key in ("acceptedOutputModes", "historyLength"):
            if key in config:
                v1[key] = config[key]
        if config.get("blocking") is False:
            v1["returnImmediately"] = True
        if config.get("pushNotificationConfig") is not None:
            v1["taskPushNotificationConfig"] = push_config_in(config["pushNotificationConfig"])
        out["configuration"] = v1
    elif config is not None:
        out["configuration"] = config
    return out


def push_config_in(config: Any, task_id: Any = None) -> Any:
    """v0.3 `PushNotificationConfig` -> v1 flat `TaskPushNotificationConfig` dict: the first
    of `authentication.schemes` becomes `authentication.scheme`."""
    if not isinstance(config, dict):
        return config
    out = {k: config[k] for k in ("id", "url", "token") if config.get(k) is not None}
    if task_id is not None:
        out["taskId"] = task_id
    auth = config.get("authentication")
    if isinstance(auth, dict):
        schemes = auth.get("schemes")
        if not isinstance(schemes, list) or not schemes:
            raise InvalidParamsError(
                "authentication.schemes must name at least one scheme",
                violations=[("pushNotificationConfig.authentication.schemes", "required")],
            )
        out["authentication"] = {"scheme": schemes[0]}
        if auth.get("credentials") is not None:
            out["authentication"]["credentials"] = auth["credentials"]
    elif auth is not None:
        out["authentication"] = auth
    return out


def task_push_config_in(params: dict[str, Any]) -> dict[str, Any]:
    """`tasks/pushNotificationConfig/set` params -> v1 `TaskPushNotificationConfig` dict."""
    config = params.get("pushNotificationConfig")
    if not isinstance(config, dict):
        raise InvalidParamsError(
            "pushNotificationConfig is required",
            violations=[("pushNotificationConfig", "required")],
        )
    converted: dict[str, Any] = push_config_in(config, params.get("taskId"))
    return converted


# ----- encoding -------------------------------------------------------------------------------


def part_out(part: Part) -> dict[str, Any]:
    out: dict[str, Any]
    metadata = dict(part.metadata) if part.metadata else None
    if part.text is not None:
        out = {"kind": "text", "text": part.text}
    elif part.raw is not None or part.url is not None:
        file: dict[str, Any] = {"bytes": part.raw} if part.raw is not None else {"uri": part.url}
        if part.filename is not None:
            file["name"] = part.filename
        if part.media_type is not None:
            file["mimeType"] = part.media_type
        out = {"kind": "file", "file": file}
    elif isinstance(part.data, dict):
        out = {"kind": "data", "data": part.data}
    else:
        out = {"kind": "data", "data": {"value": part.data}}
        metadata = {**(metadata or {}), DATA_COMPAT_KEY: True}
    if metadata:
        out["metadata"] = metadata
    return out


def _optional(source: Any, out: dict[str, Any], *names: str) -> dict[str, Any]:
    for name in names:
        value = getattr(source, name)
        if value is not None:
            out[_camel(name)] = value
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.title() for w in rest)


def message_out(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "message",
        "messageId": message.message_id,
        "role": ROLE_OUT[message.role],
        "parts": [part_out(p) for p in message.parts],
    }
    return _optional(
        message, out, "context_id", "task_id", "metadata", "extensions", "reference_task_ids"
    )


def status_out(status: TaskStatus) -> dict[str, Any]:
    out: dict[str, Any] = {"state": state_out(status.state)}
    if status.message is not None:
        out["message"] = message_out(status.message)
    if status.timestamp is not None:
        out["timestamp"] = format_timestamp(status.timestamp)
    return out


def artifact_out(artifact: Artifact) -> dict[str, Any]:
    out: dict[str, Any] = {
        "artifactId": artifact.artifact_id,
        "parts": [part_out(p) for p in artifact.parts],
    }
    return _optional(artifact, out, "name", "description", "metadata", "extensions")


def task_out(task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": "task",
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


def is_final(state: TaskState, *, closes_at_interrupt: bool) -> bool:
    """v0.3 `final`: true on the status event after which the server closes the stream."""
    return state.terminal or (closes_at_interrupt and state.interrupted)


def event_out(event: StreamResponse, *, closes_at_interrupt: bool) -> dict[str, Any]:
    if event.task is not None:
        return task_out(event.task)
    if event.message is not None:
        return message_out(event.message)
    if event.status_update is not None:
        update = event.status_update
        out: dict[str, Any] = {
            "kind": "status-update",
            "taskId": update.task_id,
            "contextId": update.context_id,
            "status": status_out(update.status),
            "final": is_final(update.status.state, closes_at_interrupt=closes_at_interrupt),
        }
        return _optional(update, out, "metadata")
    update_a = event.artifact_update
    if update_a is None:
        raise ValueError("empty StreamResponse")
    out = {
        "kind": "artifact-update",
        "taskId": update_a.task_id,
        "contextId": update_a.context_id,
        "artifact": artifact_out(update_a.artifact),
    }
    return _optional(update_a, out, "append", "last_chunk", "metadata")


def push_config_out(config: TaskPushNotificationConfig) -> dict[str, Any]:
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


def task_push_config_out(config: TaskPushNotificationConfig) -> dict[str, Any]:
    return {"taskId": config.task_id, "pushNotificationConfig": push_config_out(config)}
