"""Where push-notification configs and pending deliveries (the outbox) live.

Configs are scoped by principal and keep the protocol version that registered them (it decides
the body each webhook receives). The outbox holds one row per (event, config) until it is
delivered or given up; rows come back in `seq` order, which is the order they were added, so a
restart resumes every webhook where it stopped. `InMemoryPushStore` is for `storage.kind:
memory`; `SqlitePushStore` (push_sqlite.py) shares the tasks database file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from core.wire.models import TaskPushNotificationConfig

PushVersion = Literal["1.0", "0.3"]


@dataclass(frozen=True)
class StoredConfig:
    principal: str
    version: PushVersion
    config: TaskPushNotificationConfig  # `id` and `task_id` always set

    @property
    def task_id(self) -> str:
        return self.config.task_id or ""

    @property
    def id(self) -> str:
        return self.config.id or ""


@dataclass(frozen=True)
class Delivery:
    """One notification for one webhook: the body is final, the target a copy of the config
    as it was when the event happened (deleting the config later does not recall it)."""

    seq: int
    principal: str
    version: PushVersion
    config: TaskPushNotificationConfig
    body: str
    attempts: int = 0

    @property
    def lane(self) -> tuple[str, str]:
        """Deliveries of one lane go out one at a time, in `seq` order."""
        return (self.config.task_id or "", self.config.id or "")


class PushStore(Protocol):
    """Persistence of push configs and the delivery outbox. Safe to call from the event loop."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def put_config(self, stored: StoredConfig) -> None:
        """Insert, or replace the config with the same (principal, task, id)."""

    async def get_config(
        self, principal: str, task_id: str, config_id: str
    ) -> StoredConfig | None: ...

    async def list_configs(self, principal: str, task_id: str) -> list[StoredConfig]:
        """The task's configs in creation order."""

    async def delete_config(self, principal: str, task_id: str, config_id: str) -> None:
        """Remove one config; a missing one is not an error."""

    async def delete_task_configs(self, principal: str, task_id: str) -> None: ...

    async def watched_tasks(self) -> set[str]:
        """Ids of the tasks that have at least one config."""

    async def add_deliveries(self, deliveries: list[Delivery]) -> list[Delivery]:
        """Append to the outbox (the given `seq` is ignored); returns the rows with theirs."""

    async def pending(self) -> list[Delivery]:
        """Every row still in the outbox, oldest first."""

    async def record_attempt(self, seq: int, attempts: int) -> None: ...

    async def remove_delivery(self, seq: int) -> None: ...


class InMemoryPushStore:
    def __init__(self) -> None:
        self._configs: dict[tuple[str, str, str], StoredConfig] = {}
        self._outbox: dict[int, Delivery] = {}
        self._seq = 0

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def put_config(self, stored: StoredConfig) -> None:
        key = (stored.principal, stored.task_id, stored.id)
        self._configs.pop(key, None)  # a replaced config moves to the end, as in SQLite
        self._configs[key] = stored

    async def get_config(self, principal: str, task_id: str, config_id: str) -> StoredConfig | None:
        return self._configs.get((principal, task_id, config_id))

    async def list_configs(self, principal: str, task_id: str) -> list[StoredConfig]:
        return [c for (p, t, _), c in self._configs.items() if p == principal and t == task_id]

    async def delete_config(self, principal: str, task_id: str, config_id: str) -> None:
        self._configs.pop((principal, task_id, config_id), None)

    async def delete_task_configs(self, principal: str, task_id: str) -> None:
        for key in [k for k in self._configs if k[:2] == (principal, task_id)]:
            del self._configs[key]

    async def watched_tasks(self) -> set[str]:
        return {t for (_, t, _) in self._configs}

    async def add_deliveries(self, deliveries: list[Delivery]) -> list[Delivery]:
        added = []
        for delivery in deliveries:
            self._seq += 1
            row = Delivery(
                self._seq, delivery.principal, delivery.version, delivery.config, delivery.body
            )
            self._outbox[row.seq] = row
            added.append(row)
        return added

    async def pending(self) -> list[Delivery]:
        return [self._outbox[s] for s in sorted(self._outbox)]

    async def record_attempt(self, seq: int, attempts: int) -> None:
        row = self._outbox.get(seq)
        if row is not None:
            self._outbox[seq] = Delivery(
                row.seq, row.principal, row.version, row.config, row.body, attempts
            )

    async def remove_delivery(self, seq: int) -> None:
        self._outbox.pop(seq, None)
