"""Session mappings: `(principal, contextId) -> backend session`, and their stores.

A store only keeps records; what counts as expired is decided in `policy.py` and applied by
`manager.py`. Both stores implement the same `SessionStore` protocol.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol


@dataclass(frozen=True)
class SessionRecord:
    principal: str
    context_id: str
    backend: str
    session_id: str
    created_at: datetime
    last_used_at: datetime
    turns: int = 0


class SessionStore(Protocol):
    """Mappings keyed by (principal, context_id); one backend session per key."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get(self, principal: str, context_id: str) -> SessionRecord | None: ...

    async def put(self, record: SessionRecord) -> None:
        """Insert or replace the mapping of the record's key."""
        ...

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        """Remove the mapping only if it still names `session_id`; True when removed."""
        ...

    async def delete_many(self, records: list[SessionRecord]) -> list[SessionRecord]:
        """`delete` for each record, in one go; returns the ones removed."""
        ...

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        """Every mapping created before `cutoff` (the sweep's candidates)."""
        ...

    async def count(self) -> int: ...


class InMemorySessionStore:
    def __init__(self) -> None:
        self._records: dict[tuple[str, str], SessionRecord] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def get(self, principal: str, context_id: str) -> SessionRecord | None:
        return self._records.get((principal, context_id))

    async def put(self, record: SessionRecord) -> None:
        self._records[(record.principal, record.context_id)] = record

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        key = (principal, context_id)
        current = self._records.get(key)
        if current is None or current.session_id != session_id:
            return False
        del self._records[key]
        return True

    async def delete_many(self, records: list[SessionRecord]) -> list[SessionRecord]:
        return [r for r in records if await self.delete(r.principal, r.context_id, r.session_id)]

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        return [r for r in self._records.values() if r.created_at < cutoff]

    async def count(self) -> int:
        return len(self._records)
