"""The stores of `storage.kind: memory` (and of tests): the contracts of
core/storage/contracts.py kept in dicts, with the SQLite stores' semantics; nothing survives
the process."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

from core.storage.contracts import (
    ACTIVE_STATES,
    Delivery,
    SessionRecord,
    StaleWriteError,
    StoredConfig,
    TaskPage,
    TaskQuery,
    TurnUsage,
    WorkspaceRecord,
)
from core.storage.queued import Queued, done
from core.storage.rows import decode_cursor, encode_cursor, failed_by_restart, sort_key
from core.wire.models import Task


class MemoryStore:
    """Nothing to open or close: the records are this object's."""

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None


class InMemoryTaskStore(MemoryStore):
    """A dict of snapshots; same semantics as the SQLite store, nothing survives the process."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], Task] = {}

    async def probe(self) -> None:
        return None

    def save(self, principal: str, task: Task) -> Queued[None]:
        stored = self._tasks.get((principal, task.id))
        if stored is not None and stored.status.state.terminal and stored != task:
            raise StaleWriteError
        # Tasks are frozen wire models: keeping the object itself is keeping a snapshot.
        self._tasks[(principal, task.id)] = task
        return done()

    async def get(self, principal: str, task_id: str) -> Task | None:
        task = self._tasks.get((principal, task_id))
        return task

    async def delete(self, principal: str, task_id: str) -> None:
        self._tasks.pop((principal, task_id), None)

    async def list(self, principal: str, query: TaskQuery) -> TaskPage:
        matching = [
            t
            for (owner, _), t in self._tasks.items()
            if owner == principal
            and (query.context_id is None or t.context_id == query.context_id)
            and (query.state is None or t.status.state == query.state)
            and (
                query.status_after is None
                or (t.status.timestamp is not None and t.status.timestamp >= query.status_after)
            )
        ]
        matching.sort(key=sort_key, reverse=True)
        total = len(matching)
        if query.page_token:
            cursor = decode_cursor(query.page_token)
            matching = [t for t in matching if sort_key(t) < cursor]
        page = matching[: query.page_size]
        more = len(matching) > query.page_size
        token = encode_cursor(page[-1]) if more and page else ""
        return TaskPage(page, token, total)

    async def fail_unfinished(self, reason: str) -> int:
        stale = [k for k, t in self._tasks.items() if t.status.state in ACTIVE_STATES]
        for key in stale:
            self._tasks[key] = failed_by_restart(self._tasks[key], reason)
        return len(stale)

    async def purge_terminal(self, before: datetime) -> int:
        old = [
            k
            for k, t in self._tasks.items()
            if t.status.state.terminal and t.status.timestamp and t.status.timestamp < before
        ]
        for key in old:
            del self._tasks[key]
        return len(old)


class InMemorySessionStore(MemoryStore):
    def __init__(self) -> None:
        self._records: dict[tuple[str, str], SessionRecord] = {}
        self._tombstones: dict[tuple[str, str], datetime] = {}

    async def get(self, principal: str, context_id: str) -> SessionRecord | None:
        return self._records.get((principal, context_id))

    async def lookup(self, principal: str, context_id: str) -> tuple[SessionRecord | None, bool]:
        record = self._records.get((principal, context_id))
        if record is not None:
            return record, False
        return None, await self.take_tombstone(principal, context_id)

    async def put(self, record: SessionRecord) -> None:
        self._records[(record.principal, record.context_id)] = record

    def touch(
        self, principal: str, context_id: str, session_id: str, used_at: datetime
    ) -> Queued[None]:
        key = (principal, context_id)
        record = self._records.get(key)
        if record is not None and record.session_id == session_id:
            self._records[key] = replace(record, last_used_at=used_at, turns=record.turns + 1)
        return done()

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        key = (principal, context_id)
        current = self._records.get(key)
        if current is None or current.session_id != session_id:
            return False
        del self._records[key]
        return True

    async def expire_many(
        self, records: list[SessionRecord], expired_at: datetime
    ) -> list[SessionRecord]:
        removed = [r for r in records if await self.delete(r.principal, r.context_id, r.session_id)]
        for record in removed:
            self._tombstones[(record.principal, record.context_id)] = expired_at
        return removed

    async def take_tombstone(self, principal: str, context_id: str) -> bool:
        return self._tombstones.pop((principal, context_id), None) is not None

    async def purge_tombstones(self, expired_before: datetime) -> int:
        old = [key for key, at in self._tombstones.items() if at < expired_before]
        for key in old:
            del self._tombstones[key]
        return len(old)

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        return [r for r in self._records.values() if r.created_at < cutoff]

    async def count(self) -> int:
        return len(self._records)


class InMemoryWorkspaceStore(MemoryStore):
    def __init__(self) -> None:
        self._workspaces: dict[tuple[str, str], WorkspaceRecord] = {}

    async def get(self, principal: str, context_id: str) -> WorkspaceRecord | None:
        return self._workspaces.get((principal, context_id))

    async def put(self, record: WorkspaceRecord) -> None:
        self._workspaces[(record.principal, record.context_id)] = record

    async def delete(self, principal: str, context_id: str) -> None:
        self._workspaces.pop((principal, context_id), None)

    async def all(self) -> list[WorkspaceRecord]:
        return sorted(self._workspaces.values(), key=lambda r: r.created_at)


class InMemoryPushStore(MemoryStore):
    def __init__(self) -> None:
        self._configs: dict[tuple[str, str, str], StoredConfig] = {}
        self._outbox: dict[int, Delivery] = {}
        self._seq = 0

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


class InMemoryUsageStore(MemoryStore):
    def __init__(self) -> None:
        self._rows: list[TurnUsage] = []

    def add(self, usage: TurnUsage) -> Queued[None]:
        self._rows.append(usage)
        return done()

    async def load(self) -> list[TurnUsage]:
        return sorted(self._rows, key=lambda row: row.at)
