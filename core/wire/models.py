"""Canonical v1.0 data model (ProtoJSON of `lf.a2a.v1`).

Everything inside the daemon speaks these types; v0.3 is converted at the edge by its codecs.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import Field, JsonValue, field_validator, model_validator

from core.wire.base import Timestamp, WireModel
from core.wire.enums import RoleField, TaskState, TaskStateField

Metadata = dict[str, JsonValue]
_CONTENT = ("text", "raw", "url", "data")


class Part(WireModel):
    """One piece of content: exactly one of `text`, `raw` (base64), `url`, `data`."""

    text: str | None = None
    raw: str | None = None
    url: str | None = None
    data: JsonValue = None
    filename: str | None = None
    media_type: str | None = None
    metadata: Metadata | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_content(cls, value: Any) -> Any:
        """ProtoJSON reads a null member as unset, so `{"text": null}` holds no content. A
        part without content could be stored but never read back: refuse it here, naming the
        null member. (`data: null` is refused too: nothing could tell it from no data.)"""
        if not isinstance(value, dict):
            return value
        given = [k for k in _CONTENT if k in value]
        present = [k for k in given if value[k] is not None]
        if len(present) == 1:
            return {k: v for k, v in value.items() if k not in given or k == present[0]}
        if not present and given:
            nulls = " and ".join(given)
            raise ValueError(
                f"{nulls} {'is' if len(given) == 1 else 'are'} null; a part must hold exactly "
                "one of text, raw, url, data"
            )
        raise ValueError("a part must hold exactly one of text, raw, url, data")

    @field_validator("raw")
    @classmethod
    def _base64(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                base64.b64decode(value, validate=True)
            except binascii.Error as exc:
                raise ValueError("raw must be base64") from exc
        return value


class Message(WireModel):
    message_id: str = Field(min_length=1)
    context_id: str | None = None
    task_id: str | None = None
    role: RoleField
    parts: list[Part] = Field(min_length=1)
    metadata: Metadata | None = None
    extensions: list[str] | None = None
    reference_task_ids: list[str] | None = None

    @field_validator("role")
    @classmethod
    def _role_set(cls, value: Any) -> Any:
        if value == "ROLE_UNSPECIFIED":
            raise ValueError("role must be ROLE_USER or ROLE_AGENT")
        return value


class TaskStatus(WireModel):
    state: TaskStateField
    message: Message | None = None
    timestamp: Timestamp | None = None


class Artifact(WireModel):
    artifact_id: str = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    parts: list[Part] = Field(min_length=1)
    metadata: Metadata | None = None
    extensions: list[str] | None = None


class Task(WireModel):
    id: str
    context_id: str
    status: TaskStatus
    artifacts: list[Artifact] | None = None
    history: list[Message] | None = None
    metadata: Metadata | None = None


class TaskStatusUpdateEvent(WireModel):
    task_id: str
    context_id: str
    status: TaskStatus
    metadata: Metadata | None = None


class TaskArtifactUpdateEvent(WireModel):
    task_id: str
    context_id: str
    artifact: Artifact
    append: bool | None = None
    last_chunk: bool | None = None
    metadata: Metadata | None = None


class StreamResponse(WireModel):
    """The oneof every stream event and push body is made of: exactly one member is set."""

    task: Task | None = None
    message: Message | None = None
    status_update: TaskStatusUpdateEvent | None = None
    artifact_update: TaskArtifactUpdateEvent | None = None


class AuthenticationInfo(WireModel):
    scheme: str
    credentials: str | None = None


class TaskPushNotificationConfig(WireModel):
    tenant: str | None = None
    id: str | None = None
    task_id: str | None = None
    url: str
    token: str | None = None
    authentication: AuthenticationInfo | None = None


class SendMessageConfiguration(WireModel):
    accepted_output_modes: list[str] | None = None
    task_push_notification_config: TaskPushNotificationConfig | None = None
    history_length: int | None = Field(default=None, ge=0)
    return_immediately: bool = False


class SendMessageRequest(WireModel):
    tenant: str | None = None
    message: Message
    configuration: SendMessageConfiguration | None = None
    metadata: Metadata | None = None


class SendMessageResponse(WireModel):
    task: Task | None = None
    message: Message | None = None


class GetTaskRequest(WireModel):
    tenant: str | None = None
    id: str = Field(min_length=1)
    history_length: int | None = Field(default=None, ge=0)


class CancelTaskRequest(WireModel):
    tenant: str | None = None
    id: str = Field(min_length=1)
    metadata: Metadata | None = None


class SubscribeToTaskRequest(WireModel):
    tenant: str | None = None
    id: str = Field(min_length=1)


MAX_PAGE_SIZE = 100
DEFAULT_PAGE_SIZE = 50


class ListTasksRequest(WireModel):
    tenant: str | None = None
    context_id: str | None = None
    status: TaskStateField | None = None
    page_size: int | None = Field(default=None, ge=1, le=MAX_PAGE_SIZE)
    page_token: str | None = None
    history_length: int | None = Field(default=None, ge=0)
    status_timestamp_after: Timestamp | None = None
    include_artifacts: bool = False


class ListTasksResponse(WireModel):
    tasks: list[Task]
    next_page_token: str
    page_size: int
    total_size: int


class TaskPushConfigRequest(WireModel):
    """Get/List/Delete push-config params: the task and (for get/delete) the config id."""

    tenant: str | None = None
    task_id: str = Field(min_length=1)
    id: str | None = None
    page_size: int | None = None
    page_token: str | None = None


class ListTaskPushNotificationConfigsResponse(WireModel):
    configs: list[TaskPushNotificationConfig]
    next_page_token: str = ""


class GetExtendedAgentCardRequest(WireModel):
    tenant: str | None = None


TERMINAL_STATES = frozenset(s for s in TaskState if s.terminal)
