"""What one protocol version's codec does, whatever binding carries it.

A codec decodes the params of a request into the v1 wire models and encodes results and stream
events in its version's form. The method table (core/api/methods.py) runs each A2A operation
once for every codec (`OperationCodec`); a new protocol version is one more codec. The JSON
codecs (`Codec`: core/wire/codecs) take a JSON object (a JSON-RPC call's params, or a REST
route's body with its path and query parameters merged in, named as the v1 request names them),
give JSON (`Out`), and render errors as JSON-RPC and REST bodies; the gRPC codecs
(core/bindings/grpc/codecs.py) take the request message and give protobuf messages.
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
E = TypeVar("E")  # an encoded event
Params = dict[str, Any]
# A result in wire form: JSON-able, or JSON text already encoded; None is an empty result.
Out = dict[str, Any] | list[Any] | Encoded | None


def parse(model: type[M], params: dict[str, Any], prefix: str = "") -> M:
    """`params` as `model`; a validation failure is InvalidParams naming each bad field."""
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise from_validation(exc, prefix) from exc


class OperationCodec(Protocol):
    """One protocol version's wire form as the method table runs an operation with it. The
    params (the request as its binding decoded it) and the results (what the binding sends)
    are typed by each codec: a JSON object and `Out`, or protobuf messages."""

    version: Version
    dialect: Dialect
    # The version's own strictness and quirks, read by the method table and the bindings.
    push_field: str  # the field a refused push config URL is reported under
    lenient_push_config_id: bool  # GetTaskPushNotificationConfig: an unknown id -> the first
    card_strict: bool  # the extended card in its closed v1.0 schema
    card_public_fallback: bool  # without an extended card, the public one (not an error)
    # That public card merged with the v0.3 fields whatever `agentCard.v03Fields` says (the
    # v0.3 proto's AgentCard message has no other form).
    card_public_merged: bool

    def send_in(self, params: Any) -> SendMessageRequest: ...
    def get_task_in(self, params: Any) -> GetTaskRequest: ...
    def list_tasks_in(self, params: Any) -> ListTasksRequest: ...
    def cancel_task_in(self, params: Any) -> CancelTaskRequest: ...
    def subscribe_in(self, params: Any) -> SubscribeToTaskRequest: ...
    def push_config_in(self, params: Any) -> TaskPushNotificationConfig: ...
    def push_config_ref_in(self, params: Any, *, need_id: bool) -> TaskPushConfigRequest: ...

    def sent_out(self, outcome: Task | Message) -> object: ...
    def task_out(self, task: Task) -> object: ...
    def tasks_out(self, page: ListTasksResponse) -> object: ...
    def events_out(
        self, events: AsyncIterable[StreamResponse], *, closes_at_interrupt: bool
    ) -> AsyncIterator[Any]: ...
    def push_config_out(self, config: TaskPushNotificationConfig) -> object: ...
    def push_configs_out(
        self, configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
    ) -> object: ...
    def empty_out(self) -> object: ...
    # The card is a JSON document whatever the codec (core.api.card builds and signs it).
    def card_out(self, card: dict[str, Any]) -> object: ...


class Codec(OperationCodec, Protocol):
    """A JSON codec (for v0.3: one of its two JSON shapes): its errors in JSON-RPC and REST
    form, as the HTTP bindings send them."""

    errors_in_stream: bool  # a streaming method's early error is an event, not a reply
    error_event: str | None  # the SSE event name of an error after the first event

    def rpc_error(self, error: DaemonError) -> dict[str, Any]: ...
    def rest_error(self, error: DaemonError) -> tuple[int, dict[str, Any]]: ...


async def encoded(
    events: AsyncIterable[StreamResponse], encode: Callable[[StreamResponse], E]
) -> AsyncIterator[E]:
    """The stream's events in a codec's wire form."""
    async for event in events:
        yield encode(event)
