"""What one protocol version's codec does, whatever binding carries it.

A codec decodes the params of a request (a JSON object: a JSON-RPC call's params, a gRPC
request's ProtoJSON, or a REST route's body with its path and query parameters merged in,
named as the v1 request names them) into the v1 wire models, and encodes results, stream
events and errors in its version's form. The method table (core/api/methods.py) runs each A2A
operation once for every codec; a new protocol version is one more codec.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from core.wire.errors import DaemonError, Dialect, from_validation
from core.wire.jsonrpc import Encoded
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
from core.wire.versions import Version

M = TypeVar("M", bound=BaseModel)
Params = dict[str, Any]
# A result in wire form: JSON-able, or JSON text already encoded; None is an empty result.
Out = dict[str, Any] | list[Any] | Encoded | None


def parse(model: type[M], params: dict[str, Any], prefix: str = "") -> M:
    """`params` as `model`; a validation failure is InvalidParams naming each bad field."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise from_validation(exc, prefix) from exc


class Codec(Protocol):
    """One protocol version's wire form (for v0.3: one of its two JSON shapes)."""

    version: Version
    dialect: Dialect
    # The version's own strictness and quirks, read by the method table and the bindings.
    push_field: str  # the field a refused push config URL is reported under
    lenient_push_config_id: bool  # GetTaskPushNotificationConfig: an unknown id -> the first
    card_strict: bool  # the extended card in its closed v1.0 schema
    card_public_fallback: bool  # without an extended card, the public one (not an error)
    errors_in_stream: bool  # a streaming method's early error is an event, not a reply
    error_event: str | None  # the SSE event name of an error after the first event

    def send_in(self, params: Params) -> SendMessageRequest: ...
    def get_task_in(self, params: Params) -> GetTaskRequest: ...
    def list_tasks_in(self, params: Params) -> ListTasksRequest: ...
    def cancel_task_in(self, params: Params) -> CancelTaskRequest: ...
    def subscribe_in(self, params: Params) -> SubscribeToTaskRequest: ...
    def push_config_in(self, params: Params) -> TaskPushNotificationConfig: ...
    def push_config_ref_in(self, params: Params, *, need_id: bool) -> TaskPushConfigRequest: ...

    def sent_out(self, outcome: Task | Message) -> Out: ...
    def task_out(self, task: Task) -> Out: ...
    def tasks_out(self, page: ListTasksResponse) -> Out: ...
    def events_out(
        self, events: AsyncIterable[StreamResponse], *, closes_at_interrupt: bool
    ) -> AsyncIterator[dict[str, Any]]: ...
    def push_config_out(self, config: TaskPushNotificationConfig) -> Out: ...
    def push_configs_out(
        self, configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
    ) -> Out: ...
    def rpc_error(self, error: DaemonError) -> dict[str, Any]: ...
    def rest_error(self, error: DaemonError) -> tuple[int, dict[str, Any]]: ...


async def encoded(
    events: AsyncIterable[StreamResponse], encode: Callable[[StreamResponse], dict[str, Any]]
) -> AsyncIterator[dict[str, Any]]:
    """The stream's events in a codec's wire form."""
    async for event in events:
        yield encode(event)
