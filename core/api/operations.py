"""The A2A operations, protocol-neutral: v1 requests in, v1 results out, for a principal.

Every way in (JSON-RPC and HTTP+JSON of both versions, gRPC, and whatever binding comes next)
decodes its request with its version's codec, calls one of these methods, and encodes what it
returns; none of them reaches past this object into the engine. The a2a-python SDK's
`RequestHandler` is the model: one method per A2A operation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from core.api.origin import refuse_own_agents
from core.backend.control import Capabilities
from core.engine.readiness import Readiness
from core.engine.service import TaskService
from core.engine.streams import EventStream
from core.push.configs import PushConfigs
from core.storage.contracts import PushVersion, WorkspaceRecord
from core.usage.budget_tally import Limit, Tally
from core.usage.budgets import Budgets
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
from core.workspaces.manager import Changes
from core.workspaces.queries import WorkspaceQueries


@dataclass(frozen=True)
class Spending:
    """What a context or a principal has used, its budget and what is left of it (None: no
    maximum)."""

    used: Tally
    limit: Limit

    def left(self) -> Limit:
        limit, used = self.limit, self.used
        return Limit(
            None if limit.max_cost_usd is None else max(0.0, limit.max_cost_usd - used.cost_usd),
            None if limit.max_tokens is None else max(0, limit.max_tokens - used.tokens),
            None if limit.max_turns is None else max(0, limit.max_turns - used.turns),
        )


@dataclass(frozen=True)
class WorkspaceView:
    record: WorkspaceRecord
    size: int
    expired_unsaved: bool


class Front(Protocol):
    """What sends, streams, subscribes and cancels: the engine itself (one daemon), or the
    cluster router in front of it (core/cluster/router.py)."""

    async def send(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = ...
    ) -> Task | Message: ...

    async def stream(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = ...
    ) -> EventStream: ...

    async def subscribe(self, principal: str, task_id: str) -> EventStream: ...

    async def cancel(self, principal: str, request: CancelTaskRequest) -> Task: ...


class Operations:
    """`front` takes the operations that depend on where a task runs (default: the engine);
    `push_configs` the push config operations (default: push is off); `budgets` and
    `workspaces` answer the read-only queries a face for people needs (usage, workspaces);
    the A2A bindings use neither."""

    def __init__(
        self,
        service: TaskService,
        *,
        front: Front | None = None,
        push_configs: PushConfigs | None = None,
        budgets: Budgets | None = None,
        workspaces: WorkspaceQueries | None = None,
    ) -> None:
        self._service = service
        self._front: Front = front or service
        self._push_configs = push_configs or PushConfigs(None, service.load)
        self._budgets = budgets
        self._workspaces = workspaces

    # ----- queries beside the A2A operations ------------------------------------------------

    @property
    def backend_name(self) -> str:
        return self._service.backend_name

    def capabilities(self) -> Capabilities:
        """What callers may use: the backend's declaration narrowed by turnOptions."""
        return self._service.capabilities()

    async def readiness(self) -> Readiness:
        return await self._service.readiness()

    def usage(self, principal: str, context_id: str) -> tuple[Spending, Spending]:
        """What `context_id` and `principal` (over the budget window) have used, and what is
        left of their budgets."""
        if self._budgets is None:
            return Spending(Tally(), Limit()), Spending(Tally(), Limit())
        context, spent = self._budgets.usage(principal, context_id)
        config = self._budgets.config
        return Spending(context, config.per_context), Spending(spent, config.per_principal)

    async def workspaces(self, principal: str) -> list[WorkspaceView]:
        """`principal`'s workspaces with their size on disk."""
        if self._workspaces is None:
            return []
        return [
            WorkspaceView(record, size, expired)
            for record, size, expired in await self._workspaces.listing(principal)
        ]

    async def cumulative_changes(self, principal: str, context_id: str) -> Changes | None:
        """Everything `principal`'s context changed in its workspace so far (None: no
        workspace of its own, or nothing changed)."""
        if self._workspaces is None:
            return None
        return await self._workspaces.cumulative(principal, context_id)

    # ----- the A2A operations --------------------------------------------------------------

    def require_push(self) -> None:
        """Every push operation answers PushNotificationNotSupported while push is off,
        whatever its params (A2A §3.3.4): bindings call this before decoding them."""
        if not self._service.push_enabled:
            raise PushNotificationNotSupportedError

    async def send_message(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> Task | Message:
        refuse_own_agents(request)
        return await self._front.send(principal, request, version=version)

    async def send_streaming_message(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> EventStream:
        refuse_own_agents(request)
        return await self._front.stream(principal, request, version=version)

    async def get_task(self, principal: str, request: GetTaskRequest) -> Task:
        return await self._service.get(principal, request)

    async def list_tasks(self, principal: str, request: ListTasksRequest) -> ListTasksResponse:
        return await self._service.list(principal, request)

    async def cancel_task(self, principal: str, request: CancelTaskRequest) -> Task:
        return await self._front.cancel(principal, request)

    async def subscribe_to_task(self, principal: str, task_id: str) -> EventStream:
        return await self._front.subscribe(principal, task_id)

    async def create_push_config(
        self,
        principal: str,
        config: TaskPushNotificationConfig,
        *,
        version: PushVersion,
        field: str = "",
    ) -> TaskPushNotificationConfig:
        self.require_push()
        return await self._push_configs.create(principal, config, version=version, field=field)

    async def get_push_config(
        self, principal: str, task_id: str, config_id: str | None
    ) -> TaskPushNotificationConfig:
        self.require_push()
        return await self._push_configs.get(principal, task_id, config_id)

    async def list_push_configs(
        self, principal: str, task_id: str
    ) -> list[TaskPushNotificationConfig]:
        self.require_push()
        return await self._push_configs.list(principal, task_id)

    async def delete_push_config(self, principal: str, task_id: str, config_id: str) -> None:
        self.require_push()
        await self._push_configs.delete(principal, task_id, config_id)
