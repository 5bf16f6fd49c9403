"""The one expiry rule, shared by the lookup and the sweep."""

from __future__ import annotations

from datetime import datetime, timedelta

from core.storage.contracts import SessionRecord


def is_expired(record: SessionRecord, now: datetime, ttl: timedelta | None) -> bool:
    """A session expires `ttl` after its creation (not its last use); no ttl = never."""
    return ttl is not None and now - record.created_at >= ttl


def expiry_cutoff(now: datetime, ttl: timedelta) -> datetime:
    """Sessions created before this instant are expired at `now` (the sweep's query)."""
    return now - ttl
