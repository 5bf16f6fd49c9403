"""Which backend session serves a turn: get-or-create per (principal, contextId), with TTL.

One rule (`policy.is_expired`) decides expiry for both the lookup and the sweep. A context
with a turn in flight is never expired: the lookup happens when the turn starts (inside the
context's lane), and the sweep skips busy contexts, so a session that comes due mid-turn
expires after that turn. Whichever of the two expires a session, the next turn on that context
reports `expired_session`: the sweep leaves a tombstone per key it removed, which that turn
consumes; tombstones nobody comes back for are forgotten after `tombstone_retention`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import structlog

from core.sessions.policy import expiry_cutoff, is_expired
from core.storage.contracts import SessionRecord, SessionStore
from core.storage.queued import Queued, done

log = structlog.get_logger(__name__)

Clock = Callable[[], datetime]
Dropper = Callable[[str], Awaitable[None]]
# What else goes with an expired session of (principal, contextId): its workspace.
Expired = Callable[[str, str], Awaitable[object]]


def system_clock() -> datetime:
    return datetime.now(UTC)


@dataclass
class Lease:
    """The session of one turn. `session_id` is what to resume (None = start a new one)."""

    principal: str
    context_id: str
    session_id: str | None
    new_session: bool
    expired_session: bool = False
    # False in stateless mode (reuseByContext off): the mapping is never stored.
    persist: bool = True
    # The session the store maps the context to now (None: no mapping).
    stored: str | None = None
    counted: bool = False


class SessionManager:
    def __init__(
        self,
        store: SessionStore,
        backend_name: str,
        drop: Dropper,
        *,
        reuse_by_context: bool = True,
        ttl: timedelta | None = None,
        tombstone_retention: timedelta | None = None,
        clock: Clock = system_clock,
        on_expired: Expired | None = None,
        on_sweep: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """`tombstone_retention`: how long the sweep remembers a session it expired for the
        next turn on its context (None = until that turn comes); `on_expired` is awaited for
        the key of every session that expired (its workspace goes too); `on_sweep` after each
        sweep (what an expiry could not clean up is retried)."""
        self._on_expired = on_expired
        self._on_sweep = on_sweep
        self._store = store
        self._backend = backend_name
        self._drop = drop
        self._reuse = reuse_by_context
        self._ttl = ttl
        self._tombstone_retention = tombstone_retention
        self._clock = clock
        self._busy: Counter[tuple[str, str]] = Counter()

    @property
    def store(self) -> SessionStore:
        return self._store

    @property
    def expires(self) -> bool:
        """Whether sessions can expire at all (ttl > 0 and contexts reused)."""
        return self._ttl is not None and self._reuse

    async def begin(
        self,
        principal: str,
        context_id: str,
        *,
        task_session: str | None = None,
        new_context: bool = False,
    ) -> Lease:
        """Resolve the session for a turn starting now, and mark the context busy until
        `end()`. `task_session` is the session that served the task's earlier turn (an
        input-required continuation), used when contexts are not reused. `new_context`: the
        daemon minted the contextId for this turn, so no mapping or tombstone can exist (no
        store lookup)."""
        key = (principal, context_id)
        self._busy[key] += 1
        try:
            if not self._reuse:
                return Lease(
                    principal, context_id, task_session, task_session is None, False, False
                )
            if new_context:
                return Lease(principal, context_id, None, True, False, True)
            record, expired = await self._store.lookup(principal, context_id)
            if record is None:
                return Lease(principal, context_id, None, True, expired, True)
            if is_expired(record, self._clock(), self._ttl):
                await self._expire(record)
                return Lease(principal, context_id, None, True, True, True)
            return Lease(
                principal, context_id, record.session_id, False, False, True, record.session_id
            )
        except BaseException:
            self._release(key)
            raise

    async def fork_source(self, principal: str, context_id: str) -> str | None:
        """The session a new context may fork from `principal`'s `context_id` (None: it has
        none that is live; contexts not reused have none to fork)."""
        if not self._reuse:
            return None
        record = await self._store.get(principal, context_id)
        if record is None or is_expired(record, self._clock(), self._ttl):
            return None
        return record.session_id

    async def bound(self, lease: Lease, session_id: str) -> None:
        """The backend named the session serving this turn: store it now, so a crash later in
        the turn does not lose it. A different id than the one resumed is a new session."""
        lease.session_id = session_id
        if not lease.persist or lease.stored == session_id:
            return
        now = self._clock()
        await self._store.put(
            SessionRecord(
                principal=lease.principal,
                context_id=lease.context_id,
                backend=self._backend,
                session_id=session_id,
                created_at=now,
                last_used_at=now,
            )
        )
        lease.stored = session_id

    def count_turn(self, lease: Lease) -> Queued[None]:
        """Count the lease's turn on its session's mapping (once), queued when called
        (core/storage/queued.py): the turn's final task write is queued beside it, so the two share
        a transaction."""
        counted, lease.counted = lease.counted, True
        if counted or not lease.persist or lease.session_id is None:
            return done()
        return self._store.touch(lease.principal, lease.context_id, lease.session_id, self._clock())

    async def end(self, lease: Lease) -> None:
        """The turn is over (whatever its outcome): count it if not yet, and free the context."""
        try:
            await self.count_turn(lease)
        finally:
            self._release((lease.principal, lease.context_id))

    def _release(self, key: tuple[str, str]) -> None:
        self._busy[key] -= 1
        if self._busy[key] <= 0:
            del self._busy[key]

    async def sweep(self, batch: int = 1000) -> int:
        """Remove every expired mapping of an idle context (leaving its tombstone) and drop its
        backend session, then forget tombstones older than the retention; returns how many
        mappings were removed. Deletes go in batches (one transaction each), so a large sweep
        neither holds the store for long nor floods the log."""
        if self._ttl is None:
            return 0
        now = self._clock()
        candidates = [
            r
            for r in await self._store.created_before(expiry_cutoff(now, self._ttl))
            if (r.principal, r.context_id) not in self._busy and is_expired(r, now, self._ttl)
        ]
        removed = 0
        for start in range(0, len(candidates), batch):
            for record in await self._store.expire_many(candidates[start : start + batch], now):
                removed += 1
                await self._drop_quietly(record.session_id)
                await self._expired_quietly(record)
        if self._tombstone_retention is not None:
            await self._store.purge_tombstones(now - self._tombstone_retention)
        if self._on_sweep is not None:
            try:
                await self._on_sweep()
            except Exception:
                log.exception("session.sweep_retry_failed")
        return removed

    async def _expire(self, record: SessionRecord) -> bool:
        removed = await self._store.delete(record.principal, record.context_id, record.session_id)
        if removed:
            log.info("session.expired", context_id=record.context_id, session_id=record.session_id)
            await self._drop_quietly(record.session_id)
            await self._expired_quietly(record)
        return removed

    def now(self) -> datetime:
        """The clock session expiry reads (the database's, with replicas)."""
        return self._clock()

    async def _expired_quietly(self, record: SessionRecord) -> None:
        if self._on_expired is None:
            return
        try:
            await self._on_expired(record.principal, record.context_id)
        except Exception:
            # Logged; the session is gone either way, what it leaves is retried by nothing.
            log.exception("session.expiry_cleanup_failed", context_id=record.context_id)

    async def _drop_quietly(self, session_id: str) -> None:
        try:
            await self._drop(session_id)
        except Exception:
            # Best effort: the mapping is gone either way; the agent may have lost it.
            log.warning("session.drop_failed", session_id=session_id, exc_info=True)
