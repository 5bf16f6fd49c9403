"""Task events and cancels across replicas (storage.kind "postgres"): `ClusterEvents`
implements most of the router's `Replicas` (core/cluster/router.py).

- Every event of a task that runs here is appended to `task_events` (its `seq` orders them)
  by one writer task, in the order the task published them, in batches (one transaction and
  one round trip for the events that arrived meanwhile); each batch announces the tasks it
  touched with NOTIFY (`EVENTS_CHANNEL`, delivered at commit).
- One listening connection per replica (LISTEN on both channels) wakes the local watchers of
  a task when its events are announced, and hands a cancel to the engine when the task it
  names runs here.
- A watcher of a task running on another replica reads the task's events from its latest
  Task snapshot on, then every event with a higher `seq` as it is announced: in order, none
  twice, none missed (it registers for the wake-up before each read).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from functools import partial
from typing import TypeVar

import anyio
import asyncpg
import structlog
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from core.storage.contracts import ACTIVE_STATES
from core.storage.postgres.database import Conn, PostgresDatabase, count_of
from core.storage.postgres.tasks import (
    CANCEL_CHANNEL,
    EVENTS_CHANNEL,
    TURNS_CHANNEL,
    event_kind,
    status_event,
)
from core.wire.errors import StorageUnavailableError, TaskNotFoundError
from core.wire.models import StreamResponse, Task

log = structlog.get_logger(__name__)

# Events written in one transaction at most (a burst of text deltas).
BATCH = 256
# A watcher re-reads this often even without a wake-up: a notification sent while the
# listening connection was being re-established is not replayed by PostgreSQL.
RECHECK = 1.0
# Seconds between attempts to open a lost LISTEN connection again.
RELISTEN = 1.0
# Seconds a stopping replica gives its last events to reach the database.
FINAL_WRITE = 5.0
_ACTIVE = [s.value for s in ACTIVE_STATES]

LocalCancel = Callable[[str, str], Awaitable[None]]
T = TypeVar("T")
_Row = tuple[str, str, str, str]


class ClusterEvents:
    def __init__(self, db: PostgresDatabase, url: str, cancel_wait: timedelta) -> None:
        """`cancel_wait`: how long a cancel sent to another replica waits for the task to
        end (the engine's cancel timeout and a margin)."""
        self._db = db
        self._url = url
        self._cancel_wait = cancel_wait.total_seconds()
        self._waiters: dict[str, set[anyio.Event]] = {}
        self._send: MemoryObjectSendStream[_Row] | None = None
        self._cancels: MemoryObjectSendStream[tuple[str, str]] | None = None
        self.on_cancel: LocalCancel | None = None
        # Turns other replicas queued for this one (core/cluster/turns.py reads them).
        self.turns: MemoryObjectSendStream[int] | None = None
        self._recorded = 0
        self._written = 0
        self._progress = anyio.Event()

    # ----- life ------------------------------------------------------------------------------

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Listen and write events until cancelled. Events recorded before this started, or
        after it stopped, reach no other replica (they are logged)."""
        send, receive = anyio.create_memory_object_stream[_Row](math.inf)
        cancels, asked = anyio.create_memory_object_stream[tuple[str, str]](math.inf)
        self._cancels = cancels
        try:
            async with anyio.create_task_group() as tg:
                await tg.start(self._listen)
                self._send = send
                tg.start_soon(self._write, receive)
                tg.start_soon(self._cancel_each, asked)
                task_status.started()
        finally:
            self._send = None
            self._cancels = None
            send.close()
            cancels.close()

    async def _listen(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hold the LISTEN connection; when it is lost (the server restarted, a proxy cut
        it), open a new one, every RELISTEN seconds until it works. PostgreSQL does not replay
        what was announced in the gap, so nothing relies on one announcement: watchers re-read
        every RECHECK seconds, a cancel is announced again every RECHECK seconds until its task
        ends, and once listening again this replica re-reads the turns queued for it."""
        first = True
        failing = False
        while True:
            try:
                listener = await asyncpg.connect(self._url)
            except (OSError, asyncpg.PostgresError):
                if first:
                    raise
                if not failing:  # once per outage, not every RELISTEN
                    failing = True
                    log.warning("cluster.listen_failed", retry_s=RELISTEN)
                await anyio.sleep(RELISTEN)
                continue
            failing = False
            lost = anyio.Event()
            try:
                listener.add_termination_listener(partial(_set, lost))
                await listener.add_listener(EVENTS_CHANNEL, self._on_events)
                await listener.add_listener(CANCEL_CHANNEL, self._on_cancel)
                await listener.add_listener(TURNS_CHANNEL, self._on_turn)
                if first:
                    first = False
                    task_status.started()
                else:
                    log.info("cluster.listening_again")
                    await self._queued_turns()
                await lost.wait()
                log.warning("cluster.listen_lost")
            finally:
                with anyio.CancelScope(shield=True):
                    await listener.close()
            # Missed wake-ups: every watcher reads again now.
            for waiting in self._waiters.values():
                for wake in waiting:
                    wake.set()

    async def _queued_turns(self) -> None:
        """The turns other replicas queued for this one (announced or not): each is handed to
        the taker again (taking one is a conditional update: a turn is taken once)."""
        if self.turns is None:
            return
        try:
            rows = await self._db.fetch(
                "SELECT id FROM turn_requests WHERE target = $1 AND state = 'queued' ORDER BY id",
                self._db.replica_id,
            )
        except Exception:
            log.exception("cluster.turns_not_reread")
            return
        for row in rows:
            self.turns.send_nowait(int(row["id"]))

    # ----- writing ---------------------------------------------------------------------------

    def record(self, principal: str, task_id: str, event: StreamResponse) -> None:
        if self._send is None:
            log.warning("cluster.event_not_shared", task_id=task_id)
            return
        body = event.model_dump_json(by_alias=True, exclude_none=True)
        self._send.send_nowait((principal, task_id, event_kind(event), body))
        self._recorded += 1

    async def flushed(self) -> None:
        """Return once every event recorded so far is written (or its batch failed)."""
        target = self._recorded
        while self._written < target and self._send is not None:
            await self._progress.wait()

    async def _write(self, receive: MemoryObjectReceiveStream[_Row]) -> None:
        async with receive:
            try:
                async for first in receive:
                    await self._write_batch(_batch(first, receive))
            finally:
                # Stopping (after the drain): the last events, e.g. the shutdown's FAILED
                # statuses, still reach the other replicas' watchers, within a bound.
                with anyio.move_on_after(FINAL_WRITE, shield=True):
                    while True:
                        try:
                            first = receive.receive_nowait()
                        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                            break
                        await self._write_batch(_batch(first, receive))

    async def _write_batch(self, batch: list[_Row]) -> None:
        try:
            if not await self._db.run(partial(_append, rows=batch, replica=self._db.replica_id)):
                # Fenced: this replica's lease expired (a turn of a context it lost).
                log.warning("cluster.events_refused", events=len(batch))
                self._db.doubt_lease()
        except StorageUnavailableError:
            pass  # lost with the outage (logged once by the database); watchers re-read
        except Exception:
            log.exception("cluster.events_write_failed", events=len(batch))
        finally:
            self._written += len(batch)
            self._progress.set()
            self._progress = anyio.Event()

    # ----- listening -------------------------------------------------------------------------

    def _on_events(self, conn: object, pid: int, channel: str, task_id: object) -> None:
        for wake in self._waiters.get(str(task_id), ()):
            wake.set()

    def _on_turn(self, conn: object, pid: int, channel: str, payload: object) -> None:
        target, _, request_id = str(payload).partition(" ")
        if target == self._db.replica_id and self.turns is not None and request_id.isdigit():
            self.turns.send_nowait(int(request_id))

    def _on_cancel(self, conn: object, pid: int, channel: str, payload: object) -> None:
        try:
            asked = json.loads(str(payload))
            principal, task_id = str(asked["principal"]), str(asked["taskId"])
        except (ValueError, KeyError, TypeError):
            log.warning("cluster.bad_cancel_notice")
            return
        # asyncpg calls this outside any task: hand it to one (`_cancel_each`).
        if self._cancels is not None:
            self._cancels.send_nowait((principal, task_id))

    async def _cancel_each(self, asked: MemoryObjectReceiveStream[tuple[str, str]]) -> None:
        async with asked, anyio.create_task_group() as tg:
            async for principal, task_id in asked:
                if self.on_cancel is not None:
                    tg.start_soon(self._cancel_here, self.on_cancel, principal, task_id)

    async def _cancel_here(self, cancel: LocalCancel, principal: str, task_id: str) -> None:
        try:
            await cancel(principal, task_id)
        except Exception:
            log.exception("cluster.cancel_failed", task_id=task_id)

    def _waiter(self, task_id: str) -> anyio.Event:
        wake = anyio.Event()
        self._waiters.setdefault(task_id, set()).add(wake)
        return wake

    def _forget(self, task_id: str, wake: anyio.Event) -> None:
        waiting = self._waiters.get(task_id)
        if waiting is not None:
            waiting.discard(wake)
            if not waiting:
                del self._waiters[task_id]

    # ----- Replicas --------------------------------------------------------------------------

    async def running_elsewhere(self, principal: str, task_id: str) -> bool:
        owner = await self._db.fetchval(
            "SELECT t.replica FROM tasks t JOIN replicas r ON r.id = t.replica "
            "WHERE t.principal = $1 AND t.id = $2 AND t.state = ANY($3::text[]) "
            "AND r.expires_at > now()",
            principal,
            task_id,
            _ACTIVE,
        )
        return owner is not None and owner != self._db.replica_id

    def watch(self, principal: str, task_id: str, from_seq: int | None = None) -> RemoteWatch:
        """From the task's latest snapshot, or from the event `from_seq` on."""
        return RemoteWatch(self, principal, task_id, None if from_seq is None else from_seq - 1)

    async def wait_announced(self, key: str, look: Callable[[], Awaitable[T | None]]) -> T | None:
        """`look()` until it finds something, woken by an announcement of `key`."""
        while True:
            wake = self._waiter(key)
            try:
                found = await look()
                if found is not None:
                    return found
                with anyio.move_on_after(RECHECK):
                    await wake.wait()
            finally:
                self._forget(key, wake)

    async def cancel(self, principal: str, task_id: str) -> Task:
        """Announced again at each RECHECK until the task ends: the owner's LISTEN connection
        may have been down when it was first sent (a second cancel of a stopping turn is a
        no-op there)."""
        notice = json.dumps({"principal": principal, "taskId": task_id})
        with anyio.move_on_after(self._cancel_wait):
            while True:
                wake = self._waiter(task_id)
                try:
                    await self._db.execute("SELECT pg_notify($1, $2)", CANCEL_CHANNEL, notice)
                    task = await self._stored(principal, task_id)
                    if task.status.state.terminal:
                        return task
                    with anyio.move_on_after(RECHECK):
                        await wake.wait()
                finally:
                    self._forget(task_id, wake)
        return await self._stored(principal, task_id)

    async def _stored(self, principal: str, task_id: str) -> Task:
        body = await self._db.fetchval(
            "SELECT body FROM tasks WHERE principal = $1 AND id = $2", principal, task_id
        )
        if body is None:
            raise TaskNotFoundError
        return Task.model_validate_json(body)

    async def events_after(
        self, principal: str, task_id: str, seq: int | None
    ) -> list[tuple[int, StreamResponse]]:
        """The task's events after `seq`; None: from its latest Task snapshot on."""
        if seq is None:
            rows = await self._db.fetch(
                "SELECT seq, body FROM task_events WHERE task_id = $1 AND principal = $2 "
                "AND seq >= COALESCE((SELECT MAX(seq) FROM task_events WHERE task_id = $1 "
                "AND principal = $2 AND kind = 'task'), 0) ORDER BY seq",
                task_id,
                principal,
            )
        else:
            rows = await self._db.fetch(
                "SELECT seq, body FROM task_events WHERE task_id = $1 AND principal = $2 "
                "AND seq > $3 ORDER BY seq",
                task_id,
                principal,
                seq,
            )
        return [(r["seq"], StreamResponse.model_validate_json(r["body"])) for r in rows]


class RemoteWatch:
    """One watcher of a task running on another replica (an `EventSource`)."""

    def __init__(
        self, events: ClusterEvents, principal: str, task_id: str, after: int | None = None
    ) -> None:
        self._events = events
        self._principal = principal
        self._task_id = task_id
        self._after = after
        self._closed = False

    def __aiter__(self) -> AsyncIterator[StreamResponse]:
        return self._follow()

    async def _follow(self) -> AsyncIterator[StreamResponse]:
        seq = self._after
        while not self._closed:
            wake = self._events._waiter(self._task_id)
            try:
                found = await self._events.events_after(self._principal, self._task_id, seq)
                for seq, event in found:  # noqa: B007 - the last seq is where the next read starts
                    yield event
                    if _final(event):
                        return
                if not found:
                    with anyio.move_on_after(RECHECK) as idle:
                        await wake.wait()
                    if idle.cancelled_caught and (ended := await self._ended_unannounced(seq)):
                        yield ended
                        return
            finally:
                self._events._forget(self._task_id, wake)

    async def _ended_unannounced(self, seq: int | None) -> StreamResponse | None:
        """After a quiet RECHECK: the task's final status when the stored task is terminal
        though no final event came (its replica could not write it), so no watcher waits for
        ever; None otherwise."""
        try:
            task = await self._events._stored(self._principal, self._task_id)
        except TaskNotFoundError:
            return None
        if not task.status.state.terminal:
            return None
        if await self._events.events_after(self._principal, self._task_id, seq):
            return None  # the final event is there after all: the next read yields it
        return status_event(task)

    def close(self) -> None:
        self._closed = True


def _batch(first: _Row, receive: MemoryObjectReceiveStream[_Row]) -> list[_Row]:
    """`first` and what else is queued now, up to BATCH."""
    batch = [first]
    while len(batch) < BATCH:
        try:
            batch.append(receive.receive_nowait())
        except anyio.WouldBlock:
            break
    return batch


def _set(event: anyio.Event, conn: object) -> None:
    event.set()


def _final(event: StreamResponse) -> bool:
    status = event.task.status if event.task else None
    if event.status_update is not None:
        status = event.status_update.status
    return status is not None and status.state.terminal


async def _append(conn: Conn, rows: list[_Row], replica: str) -> bool:
    """Append the rows, fenced like a task write: only while `replica`'s lease is live (False
    otherwise, nothing written)."""
    principals, task_ids, kinds, bodies = (list(column) for column in zip(*rows, strict=True))
    status = await conn.execute(
        "INSERT INTO task_events (principal, task_id, kind, body) "
        "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) "
        "WHERE EXISTS (SELECT 1 FROM replicas WHERE id = $5 AND expires_at > now())",
        principals,
        task_ids,
        kinds,
        bodies,
        replica,
    )
    if not count_of(status):
        return False
    await conn.execute(
        "SELECT pg_notify($1, t) FROM (SELECT DISTINCT unnest($2::text[]) AS t) AS touched",
        EVENTS_CHANNEL,
        task_ids,
    )
    return True
