"""What the SQLite and PostgreSQL stores (and the memory store's paging) share about rows:
the task listing's sort key and page cursor, and decoding a stored task, push config,
delivery or usage row, where a record that cannot be decoded is reported once and skipped,
never fatal."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from typing import cast, get_args

from core.storage.contracts import Delivery, PushVersion, StoredConfig, TurnUsage
from core.wire.base import format_timestamp, utcnow
from core.wire.enums import TaskState
from core.wire.errors import InvalidParamsError, TaskUnreadableError
from core.wire.models import Message, Part, Task, TaskPushNotificationConfig, TaskStatus

# What decoding a row can raise: a ValidationError (a ValueError) from the models, a
# ValueError from timestamps, a TypeError for a column of the wrong type.
ROW_ERRORS = (ValueError, TypeError, KeyError)


# ----- tasks -------------------------------------------------------------------------------


def sort_key(task: Task) -> tuple[str, str]:
    ts = task.status.timestamp
    return (format_timestamp(ts) if ts else "", task.id)


def encode_cursor(task: Task) -> str:
    return cursor_of(*sort_key(task))


def cursor_of(status_ts: str, task_id: str) -> str:
    """The page token that resumes after the task with this sort key."""
    raw = json.dumps([status_ts, task_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[str, str]:
    invalid = InvalidParamsError("Invalid pageToken", violations=[("pageToken", "invalid")])
    try:
        padded = token + "=" * (-len(token) % 4)
        ts, task_id = json.loads(base64.urlsafe_b64decode(padded))
    except (binascii.Error, ValueError, TypeError) as exc:
        raise invalid from exc
    if not isinstance(ts, str) or not isinstance(task_id, str):
        raise invalid
    return ts, task_id


Report = Callable[[str, dict[str, object], Exception], None]


def decode_task(report: Report, principal: str, task_id: object, body: object) -> Task | None:
    """A stored body as a task, or None (reported once, `unreadable`) when it cannot be."""
    try:
        if not isinstance(body, str | bytes):
            raise TypeError(f"body is {type(body).__name__}")
        return Task.model_validate_json(body)
    except ROW_ERRORS as exc:
        report("tasks", {"principal": principal, "id": task_id}, exc)
        return None


def unreadable_task(task_id: str) -> TaskUnreadableError:
    return TaskUnreadableError(
        f"Task {task_id} cannot be read from the daemon's storage (its record is damaged), so "
        "it is treated as not found"
    )


def failed_by_restart(task: Task, reason: str) -> Task:
    note = Message(
        message_id=f"{task.id}-restart",
        context_id=task.context_id,
        task_id=task.id,
        role="ROLE_AGENT",
        parts=[Part(text=reason)],
    )
    return task.model_copy(
        update={"status": TaskStatus(state=TaskState.FAILED, message=note, timestamp=utcnow())}
    )


# ----- usage rows --------------------------------------------------------------------------

USAGE_COLUMNS = (
    "task_id, principal, context_id, at, input_tokens, output_tokens, cache_read_tokens, "
    "cache_creation_tokens, cost_usd, model"
)


def decode_usage(row: tuple[object, ...]) -> TurnUsage:
    """A row, each column's type checked (SQLite keeps whatever it was given)."""
    task_id, principal, context_id, at, inp, out, read, made, cost, model = row
    if not all(isinstance(v, str) for v in (task_id, principal, context_id)):
        raise TypeError("a column has the wrong type")
    if not isinstance(at, float | int) or not isinstance(cost, float | int):
        raise TypeError("a number column has the wrong type")
    if model is not None and not isinstance(model, str):
        raise TypeError("model is not text")
    return TurnUsage(
        str(task_id),
        str(principal),
        str(context_id),
        float(at),
        _count(inp),
        _count(out),
        _count(read),
        _count(made),
        float(cost),
        model,
    )


def _count(value: object) -> int:
    if type(value) is not int or value < 0:
        raise TypeError("a token count is not a count")
    return value


# ----- push configs and deliveries ---------------------------------------------------------


def config_json(config: TaskPushNotificationConfig) -> str:
    return config.model_dump_json(by_alias=True, exclude_none=True)


def _version(value: object) -> PushVersion:
    if value not in get_args(PushVersion):
        raise ValueError("unknown protocol version")
    return cast(PushVersion, value)


def _config(body: object) -> TaskPushNotificationConfig:
    if not isinstance(body, str | bytes):
        raise TypeError(f"config is {type(body).__name__}")
    return TaskPushNotificationConfig.model_validate_json(body)


def _delivery(row: tuple[object, ...]) -> Delivery:
    seq, principal, version, config, body, attempts = row
    if type(seq) is not int or type(attempts) is not int or not isinstance(principal, str):
        raise TypeError("a column has the wrong type")
    if not isinstance(body, str):
        raise TypeError(f"body is {type(body).__name__}")
    json.loads(body)  # the webhook gets it as it is: it must be JSON
    return Delivery(seq, principal, _version(version), _config(config), body, attempts)


def stored_config_of(
    report: Report, principal: str, task_id: str, row: tuple[object, object, object]
) -> StoredConfig | None:
    """A `push_configs` row (id, version, body), or None (reported) when it cannot be read."""
    config_id, version, body = row
    try:
        return StoredConfig(principal, _version(version), _config(body))
    except ROW_ERRORS as exc:
        report("push_configs", {"principal": principal, "task_id": task_id, "id": config_id}, exc)
        return None


def delivery_of(report: Report, row: tuple[object, ...]) -> Delivery | None:
    """A `push_outbox` row, or None (reported) when it cannot be read."""
    try:
        return _delivery(row)
    except ROW_ERRORS as exc:
        report("push_outbox", {"seq": row[0]}, exc)
        return None
