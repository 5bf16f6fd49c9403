"""The v1.0 codec: the params are the ProtoJSON of the v1 request, which the v1 models are, so
decoding is validation and encoding is the model's own JSON (one step, no dict in between)."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

from pydantic import ValidationError

from core.wire.codecs.codec import Out, Params, encoded, parse
from core.wire.errors import (
    DaemonError,
    Dialect,
    InvalidParamsError,
    from_validation,
    jsonrpc_error,
    rest_error,
)
from core.wire.jsonrpc import Encoded
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsResponse,
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
from core.wire.versions import V1_0


class V1Codec:
    version = V1_0
    dialect: Dialect = "1.0"
    push_field = ""
    lenient_push_config_id = False
    card_strict = True
    card_public_fallback = False
    card_public_merged = False
    errors_in_stream = False
    error_event: str | None = "error"

    def send_in(self, params: Params) -> SendMessageRequest:
        # `parse` inlined: this is every send's path.
        try:
            return SendMessageRequest.model_validate(params)
        except ValidationError as exc:
            raise from_validation(exc) from exc

    def get_task_in(self, params: Params) -> GetTaskRequest:
        return parse(GetTaskRequest, params)

    def list_tasks_in(self, params: Params) -> ListTasksRequest:
        return parse(ListTasksRequest, params)

    def cancel_task_in(self, params: Params) -> CancelTaskRequest:
        return parse(CancelTaskRequest, params)

    def subscribe_in(self, params: Params) -> SubscribeToTaskRequest:
        return parse(SubscribeToTaskRequest, params)

    def push_config_in(self, params: Params) -> TaskPushNotificationConfig:
        return parse(TaskPushNotificationConfig, params)

    def push_config_ref_in(self, params: Params, *, need_id: bool) -> TaskPushConfigRequest:
        request = parse(TaskPushConfigRequest, params)
        if need_id and not request.id:
            raise InvalidParamsError("id is required", violations=[("id", "required")])
        return request

    def sent_out(self, outcome: Task | Message) -> Out:
        key = b"message" if isinstance(outcome, Message) else b"task"
        return Encoded(b'{"' + key + b'":' + outcome.dump_json() + b"}")

    def task_out(self, task: Task) -> Out:
        return Encoded(task.dump_json())

    def tasks_out(self, page: ListTasksResponse) -> Out:
        return Encoded(page.dump_json())

    def events_out(
        self, events: AsyncIterable[StreamResponse], *, closes_at_interrupt: bool
    ) -> AsyncIterator[dict[str, Any]]:
        # v1.0 streams carry no `final` flag: the server closing the stream says it.
        return encoded(events, StreamResponse.dump)

    def push_config_out(self, config: TaskPushNotificationConfig) -> Out:
        return config.dump()

    def push_configs_out(
        self, configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
    ) -> Out:
        return push_config_page(configs, request).dump()

    def empty_out(self) -> Out:
        return None

    def card_out(self, card: dict[str, Any]) -> Out:
        return card

    def rpc_error(self, error: DaemonError) -> dict[str, Any]:
        return jsonrpc_error(error, "1.0")

    def rest_error(self, error: DaemonError) -> tuple[int, dict[str, Any]]:
        return rest_error(error)


CODEC = V1Codec()


def push_config_page(
    configs: list[TaskPushNotificationConfig], request: TaskPushConfigRequest
) -> ListTaskPushNotificationConfigsResponse:
    """`ListTaskPushNotificationConfigsResponse`; the page token is an offset (gRPC pages the
    same way)."""
    page_size, page_token = request.page_size, request.page_token
    try:
        start = int(page_token) if page_token else 0
    except ValueError as exc:
        raise InvalidParamsError(
            "Invalid pageToken", violations=[("pageToken", "invalid")]
        ) from exc
    if start < 0 or (page_size is not None and page_size < 0):
        raise InvalidParamsError("Invalid page", violations=[("pageToken", "invalid")])
    end = start + page_size if page_size else len(configs)
    token = str(end) if end < len(configs) else ""
    return ListTaskPushNotificationConfigsResponse(
        configs=configs[start:end], next_page_token=token
    )
