"""Push notification configs: the CRUD operations of both versions and bindings, scoped to
the caller's principal (another principal's task is not found), and the checks a config must
pass before it is stored (no header injection, a deliverable target)."""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable

from core.push.dispatcher import PushDispatcher, PushTargetRefusedError
from core.storage.contracts import PushVersion, StoredConfig
from core.wire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotFoundError,
)
from core.wire.models import Task, TaskPushNotificationConfig

TaskLoader = Callable[[str, str], Awaitable[Task]]


async def vet_config(push: PushDispatcher, config: TaskPushNotificationConfig, field: str) -> None:
    """Refuse a config that could not be delivered safely (a header injection, a target the
    guard refuses), naming the offending field (`field` prefixes its name)."""
    auth = config.authentication
    for name, value in (
        ("token", config.token),
        ("authentication.scheme", auth.scheme if auth else None),
        ("authentication.credentials", auth.credentials if auth else None),
    ):
        if value and ("\r" in value or "\n" in value):
            path = f"{field}.{name}" if field else name
            raise InvalidParamsError(
                f"{path} must not contain line breaks", violations=[(path, "line break")]
            )
    path = f"{field}.url" if field else "url"
    try:
        await push.sender.vet(config.url)
    except PushTargetRefusedError as exc:
        raise InvalidParamsError(f"{path}: {exc}", violations=[(path, str(exc))]) from exc


class PushConfigs:
    """`load(principal, task_id)` raises TaskNotFound for a task the principal cannot see."""

    def __init__(self, push: PushDispatcher | None, load: TaskLoader) -> None:
        self._push = push
        self._load = load

    def _require_push(self) -> PushDispatcher:
        if self._push is None:
            raise PushNotificationNotSupportedError
        return self._push

    async def vet(self, config: TaskPushNotificationConfig, field: str) -> None:
        """Refuse a config that could not be delivered safely, naming the offending field."""
        await vet_config(self._require_push(), config, field)

    async def create(
        self,
        principal: str,
        config: TaskPushNotificationConfig,
        *,
        version: PushVersion,
        field: str = "",
    ) -> TaskPushNotificationConfig:
        """Register (or replace) a webhook for the caller's task; a missing id is the task id.
        `field` prefixes the names of refused fields in errors."""
        push = self._require_push()
        if not config.task_id:
            raise InvalidParamsError("taskId is required", violations=[("taskId", "required")])
        await self._load(principal, config.task_id)
        await self.vet(config, field)
        stored = config.model_copy(update={"id": config.id or config.task_id})
        await push.put(StoredConfig(principal, version, stored))
        return stored

    async def get(
        self, principal: str, task_id: str, config_id: str | None
    ) -> TaskPushNotificationConfig:
        """One config; without an id, the one named after the task, else the first."""
        push = self._require_push()
        await self._load(principal, task_id)
        if config_id:
            found = await push.store.get_config(principal, task_id, config_id)
        else:
            configs = await push.store.list_configs(principal, task_id)
            found = next((c for c in configs if c.id == task_id), configs[0] if configs else None)
        if found is None:
            raise TaskNotFoundError("Push notification config not found")
        return found.config

    async def list(self, principal: str, task_id: str) -> builtins.list[TaskPushNotificationConfig]:
        push = self._require_push()
        await self._load(principal, task_id)
        return [c.config for c in await push.store.list_configs(principal, task_id)]

    async def delete(self, principal: str, task_id: str, config_id: str) -> None:
        """Idempotent: deleting a config that is not there succeeds."""
        push = self._require_push()
        await self._load(principal, task_id)
        await push.delete(principal, task_id, config_id)
