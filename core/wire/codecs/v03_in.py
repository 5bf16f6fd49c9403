"""Decoding for the v0.3 codec: v0.3 requests of either shape -> v1-shaped dicts.

The canonical v1 models then validate them, so every rule lives once (in models.py). The
ProtoJSON shape is lenient on input (a2a-protocol.md §0): the proto's JSON names or its field
names (snake_case), resource names (`tasks/{id}`), and JSON-RPC-shaped messages (`parts`,
`kind`, `role: "user"`) are all accepted; a ProtoJSON message is first brought to the JSON-RPC
shape, then decoded as one.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic.alias_generators import to_snake

from core.wire.enums import Role
from core.wire.errors import InvalidParamsError

ROLE_IN = {"user": Role.USER.value, "agent": Role.AGENT.value}
DATA_COMPAT_KEY = "data_part_compat"


class Shape(StrEnum):
    """The two JSON forms of v0.3: JSON-RPC (`kind` discriminators, lowercase enums, results
    as they are) and the ProtoJSON of the v0.3 proto (HTTP+JSON: `content`,
    `TASK_STATE_CANCELLED`, results wrapped in their oneof member)."""

    JSONRPC = "jsonrpc"
    PROTO = "proto"


def field(source: dict[str, Any], name: str, shape: Shape) -> Any:
    """`source[name]`; in ProtoJSON also under the proto field name (snake_case)."""
    if name in source or shape is Shape.JSONRPC:
        return source.get(name)
    return source.get(to_snake(name))


def strip_resource(name: str, collection: str = "tasks") -> str:
    prefix = f"{collection}/"
    return name[len(prefix) :] if name.startswith(prefix) else name


def missing(where: str, why: str) -> InvalidParamsError:
    """A part without content (absent or null) could be stored but never read back."""
    return InvalidParamsError(f"Invalid params: {where}: {why}", violations=[(where, why)])


# ----- messages -------------------------------------------------------------------------------


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
                raise missing(f"{where}.text", "a text part needs its text")
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
                raise missing(f"{where}.data", "a data part needs a value other than null")
            return {"data": data, **common}
    raise InvalidParamsError(
        f"Unsupported part kind {kind!r}", violations=[(f"{where}.kind", "unsupported kind")]
    )


def _file_in(file: Any, common: dict[str, Any], where: str) -> dict[str, Any]:
    if not isinstance(file, dict):
        raise missing(f"{where}.file", f"{where}.file must be an object")
    out: dict[str, Any] = dict(common)
    if file.get("bytes") is not None:
        out["raw"] = file["bytes"]
    if file.get("uri") is not None:
        out["url"] = file["uri"]
    if "raw" not in out and "url" not in out:
        raise missing(f"{where}.file", "a file part needs its bytes or its uri")
    for src, dst in (("name", "filename"), ("mimeType", "mediaType")):
        if file.get(src) is not None:
            out[dst] = file[src]
    return out


PROTO_FILE_FIELDS = (("fileWithBytes", "bytes"), ("fileWithUri", "uri"), ("mimeType", "mimeType"))


def _proto_part(part: Any) -> Any:
    """A ProtoJSON part (`file.fileWithBytes`, `data.data`) in the JSON-RPC shape."""
    if not isinstance(part, dict) or "kind" in part:
        return part
    file = part.get("file")
    if isinstance(file, dict) and not ({"bytes", "uri"} & file.keys()):
        converted: dict[str, Any] = {}
        for name, key in (*PROTO_FILE_FIELDS, ("name", "name")):
            value = field(file, name, Shape.PROTO)
            if value is not None:
                converted[key] = value
        return {**part, "kind": "file", "file": converted}
    data = part.get("data")
    if isinstance(data, dict) and set(data) == {"data"}:
        return {**part, "kind": "data", "data": data["data"]}
    return part


MESSAGE_FIELDS = ("messageId", "contextId", "taskId", "metadata", "extensions", "referenceTaskIds")


def _proto_message(message: dict[str, Any]) -> dict[str, Any]:
    """A ProtoJSON message (`content`, snake_case names) in the JSON-RPC shape."""
    out: dict[str, Any] = {}
    for name in MESSAGE_FIELDS:
        value = field(message, name, Shape.PROTO)
        if value is not None:
            out[name] = value
    if message.get("role") is not None:
        out["role"] = message["role"]
    parts = message["content"] if "content" in message else message.get("parts")
    if isinstance(parts, list):
        out["parts"] = [_proto_part(p) for p in parts]
    elif parts is not None:
        out["parts"] = parts
    return out


def message_in(message: Any, shape: Shape, where: str = "message") -> Any:
    if not isinstance(message, dict):
        return message
    if shape is Shape.PROTO:
        message = _proto_message(message)
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


# ----- requests -------------------------------------------------------------------------------


def send_in(params: dict[str, Any], shape: Shape) -> dict[str, Any]:
    """`MessageSendParams` (JSON-RPC) or `SendMessageRequest` (ProtoJSON, which also takes
    the JSON-RPC form) -> v1 `SendMessageRequest` dict."""
    proto = shape is Shape.PROTO
    message = params.get("request") if proto and "message" not in params else params.get("message")
    out: dict[str, Any] = {"message": message_in(message, shape)}
    if "metadata" in params:
        out["metadata"] = params["metadata"]
    config = params.get("configuration")
    if not isinstance(config, dict):
        if config is not None:
            out["configuration"] = config
        return out
    v1: dict[str, Any] = {}
    for name in ("acceptedOutputModes", "historyLength"):
        value = field(config, name, shape)
        # JSON-RPC passes what it is given; ProtoJSON leaves unset fields out, and its int32
        # historyLength of 0 means "no limit".
        unset = value is None or (name == "historyLength" and value == 0)
        if (name in config) if not proto else not unset:
            v1[name] = value
    # JSON-RPC blocks unless told not to; a proto bool left out is false: non-blocking.
    if config.get("blocking") is False if not proto else not config.get("blocking", False):
        v1["returnImmediately"] = True
    push = field(config, "pushNotification" if proto else "pushNotificationConfig", shape)
    if push is not None:
        v1["taskPushNotificationConfig"] = push_config_in(push)
    out["configuration"] = v1
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


def task_push_config_in(params: dict[str, Any], shape: Shape) -> Any:
    """`tasks/pushNotificationConfig/set` params (JSON-RPC), or the ProtoJSON body of
    `POST /v1/tasks/{id}/pushNotificationConfigs` with the path's task id as `taskId`: the
    reference client's `{parent, configId, config: {name, pushNotificationConfig}}` or the bare
    `{name?, pushNotificationConfig}` -> v1 `TaskPushNotificationConfig` dict."""
    source = params
    if shape is Shape.PROTO and isinstance(params.get("config"), dict):
        source = params["config"]
    config = field(source, "pushNotificationConfig", shape)
    if not isinstance(config, dict):
        raise InvalidParamsError(
            "pushNotificationConfig is required",
            violations=[("pushNotificationConfig", "required")],
        )
    config_id = field(params, "configId", shape) if shape is Shape.PROTO else None
    if config_id and not config.get("id"):
        config = {**config, "id": config_id}
    return push_config_in(config, params.get("taskId"))
