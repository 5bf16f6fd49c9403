"""Session mappings: `(principal, contextId) -> backend session`, and their stores.

A store only keeps records (and a tombstone per key the sweep expired, until the next turn
there or the retention); what counts as expired is decided in `policy.py` and applied by
`manager.py`. Both stores implement the same `SessionStore` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from core.storage.queued import Queued, done


@dataclass(frozen=True)
class SessionRecord:
    principal: str
    context_id: str
    backend: str
    session_id: str
    created_at: datetime
    last_used_at: datetime
    turns: int = 0


@dataclass(frozen=True)
class WorkspaceRecord:
    """Where a context's agent works (core/workspaces): a git worktree of the working
    directory's repository, or a private copy with its own git directory (`git_dir`)."""

    principal: str
    context_id: str
    mode: str
    path: str
    branch: str
    base: str
    created_at: datetime
    git_dir: str | None = None


class SessionStore(Protocol):
    """Mappings keyed by (principal, context_id); one backend session per key."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get(self, principal: str, context_id: str) -> SessionRecord | None: ...

    async def lookup(self, principal: str, context_id: str) -> tuple[SessionRecord | None, bool]:
        """The key's mapping; when there is none, also take its tombstone (True when there was
        one). One transaction: the lookup a turn starts with."""
        ...

    async def put(self, record: SessionRecord) -> None:
        """Insert or replace the mapping of the record's key."""
        ...

    def touch(
        self, principal: str, context_id: str, session_id: str, used_at: datetime
    ) -> Queued[None]:
        """Count one more turn on the key's mapping, if it still names `session_id`: queued
        when called (core/storage/queued.py)."""
        ...

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        """Remove the mapping only if it still names `session_id`; True when removed."""
        ...

    async def expire_many(
        self, records: list[SessionRecord], expired_at: datetime
    ) -> list[SessionRecord]:
        """`delete` for each record, in one go, leaving a tombstone (stamped `expired_at`) for
        each key removed, so the next turn there can still learn its session expired; returns
        the ones removed."""
        ...

    async def take_tombstone(self, principal: str, context_id: str) -> bool:
        """Remove the key's tombstone; True when there was one (its session expired unseen)."""
        ...

    async def purge_tombstones(self, expired_before: datetime) -> int:
        """Forget tombstones stamped before `expired_before`; returns how many."""
        ...

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        """Every mapping created before `cutoff` (the sweep's candidates)."""
        ...

    async def count(self) -> int: ...

    async def workspace(self, principal: str, context_id: str) -> WorkspaceRecord | None:
        """The context's workspace, if it has one."""
        ...

    async def put_workspace(self, record: WorkspaceRecord) -> None:
        """Insert or replace the workspace of the record's key."""
        ...

    async def delete_workspace(self, principal: str, context_id: str) -> None: ...

    async def workspaces(self) -> list[WorkspaceRecord]:
        """Every workspace (the `workspaces` command, the maxWorkspaces count)."""
        ...


class InMemorySessionStore:
    def __init__(self) -> None:
        self._records: dict[tuple[str, str], SessionRecord] = {}
        self._tombstones: dict[tuple[str, str], datetime] = {}
        self._workspaces: dict[tuple[str, str], WorkspaceRecord] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

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

    async def workspace(self, principal: str, context_id: str) -> WorkspaceRecord | None:
        return self._workspaces.get((principal, context_id))

    async def put_workspace(self, record: WorkspaceRecord) -> None:
        self._workspaces[(record.principal, record.context_id)] = record

    async def delete_workspace(self, principal: str, context_id: str) -> None:
        self._workspaces.pop((principal, context_id), None)

    async def workspaces(self) -> list[WorkspaceRecord]:
        return list(self._workspaces.values())
