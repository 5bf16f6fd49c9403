"""The A2A operations, protocol-neutral: v1 requests in, v1 results out, for a principal.

Every way in (JSON-RPC and HTTP+JSON of both versions, gRPC, and whatever binding comes next)
decodes its request with its version's codec, calls one of these methods, and encodes what it
returns; none of them reaches past this object into the engine. The a2a-python SDK's
`RequestHandler` is the model: one method per A2A operation.
"""

from __future__ import annotations

from core.engine.service import TaskService
from core.engine.streams import EventStream
from core.storage.push import PushVersion
from core.wire.errors import PushNotificationNotSupportedError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskPushNotificationConfig,
)


class Operations:
    def __init__(self, service: TaskService) -> None:
        self._service = service

    def require_push(self) -> None:
        """Every push operation answers PushNotificationNotSupported while push is off,
        whatever its params (A2A §3.3.4): bindings call this before decoding them."""
        if not self._service.push_enabled:
            raise PushNotificationNotSupportedError

    async def send_message(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> Task | Message:
        return await self._service.send(principal, request, version=version)

    async def send_streaming_message(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> EventStream:
        return await self._service.stream(principal, request, version=version)

    async def get_task(self, principal: str, request: GetTaskRequest) -> Task:
        return await self._service.get(principal, request)

    async def list_tasks(self, principal: str, request: ListTasksRequest) -> ListTasksResponse:
        return await self._service.list(principal, request)

    async def cancel_task(self, principal: str, request: CancelTaskRequest) -> Task:
        return await self._service.cancel(principal, request)

    async def subscribe_to_task(self, principal: str, task_id: str) -> EventStream:
        return await self._service.subscribe(principal, task_id)

    async def create_push_config(
        self,
        principal: str,
        config: TaskPushNotificationConfig,
        *,
        version: PushVersion,
        field: str = "",
    ) -> TaskPushNotificationConfig:
        self.require_push()
        return await self._service.push_configs.create(
            principal, config, version=version, field=field
        )

    async def get_push_config(
        self, principal: str, task_id: str, config_id: str | None
    ) -> TaskPushNotificationConfig:
        self.require_push()
        return await self._service.push_configs.get(principal, task_id, config_id)

    async def list_push_configs(
        self, principal: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        self.require_push()
        return await self._service.push_configs.list(principal, task_id)

    async def delete_push_config(self, principal: str, task_id: str, config_id: str) -> None:
        self.require_push()
        await self._service.push_configs.delete(principal, task_id, config_id)
