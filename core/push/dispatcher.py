"""Push notifications: every event of a task with configs becomes one outbox row per webhook,
and each webhook gets its rows one at a time, in order, until delivered or given up.

Contract:
- `notify` is called synchronously with every task event and never waits: the task never slows
  down for a webhook. Events go through one intake queue, are persisted to the outbox (with
  the body already encoded for the config's protocol version), then handed to the webhook's
  lane.
- One lane per (task, config): at most one request in flight, rows in `seq` order; a failing
  row is retried with exponential backoff and jitter, up to `max_attempts`, and blocks only its
  own lane. Other webhooks and tasks are never delayed.
- At-least-once: a row leaves the outbox only after a 2xx (or when given up). Rows left at
  shutdown are delivered after the next start, so a receiver may see a duplicate.
- The HTTP side is a `PushSender` (core/server), which also owns the SSRF guard.
"""

from __future__ import annotations

import json
import math
import random
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from core.engine.task_run import TaskRun
from core.storage.contracts import Delivery, PushStore, PushVersion, StoredConfig
from core.wire.codecs import v03
from core.wire.models import StreamResponse, Task, TaskPushNotificationConfig

log = structlog.get_logger(__name__)

TOKEN_HEADER = "X-A2A-Notification-Token"  # noqa: S105 - a header name, not a secret


class PushDeliveryError(Exception):
    """One delivery attempt failed (connection, timeout, non-2xx answer); it may be retried."""


class PushTargetRefusedError(PushDeliveryError):
    """The webhook URL is not allowed (scheme, or an address the SSRF guard refuses); the
    message says why. Never retried."""


class PushSender(Protocol):
    """Sends one webhook request. Implementations must not follow redirects."""

    async def vet(self, url: str) -> None:
        """Raise `PushTargetRefusedError` unless `url` may receive notifications."""

    async def send(self, url: str, body: bytes, headers: Mapping[str, str]) -> None:
        """POST `body`; return on a 2xx answer, raise `PushDeliveryError` otherwise. The
        caller bounds the time it may take."""

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 6
    timeout: float = 10.0
    backoff: float = 1.0
    max_backoff: float = 60.0

    def delay(self, attempt: int, jitter: float) -> float:
        """Seconds before attempt `attempt + 1`: doubling from `backoff`, capped, then scaled
        by `jitter` in [0.5, 1) so webhooks that failed together do not retry together."""
        base = min(self.max_backoff, self.backoff * 2.0 ** (attempt - 1))
        return base * (0.5 + jitter / 2)


def webhook_headers(config: TaskPushNotificationConfig) -> dict[str, str]:
    headers = {"Content-Type": "application/json"}
    auth = config.authentication
    if auth is not None and auth.credentials:
        headers["Authorization"] = f"{auth.scheme} {auth.credentials}"
    if config.token:
        headers[TOKEN_HEADER] = config.token
    return headers


def _ends_task(event: StreamResponse) -> bool:
    if event.message is not None:
        return True
    status = (
        event.task.status
        if event.task
        else (event.status_update.status if event.status_update else None)
    )
    return status is not None and status.state.terminal


def _body(version: PushVersion, event: StreamResponse, snapshot: Task) -> str | None:
    """v1.0: the event itself; v0.3: the whole task as it is after the event (a direct
    Message reply has no v0.3 form)."""
    if version == "1.0":
        return event.model_dump_json(by_alias=True, exclude_none=True)
    if event.message is not None:
        return None
    return json.dumps(v03.JSONRPC.task_out(snapshot), separators=(",", ":"))


@dataclass(frozen=True)
class _Event:
    principal: str
    task_id: str
    event: StreamResponse
    snapshot: Task


def _unobserved(outcome: str) -> None:
    return None


class PushDispatcher:
    def __init__(
        self,
        store: PushStore,
        sender: PushSender,
        policy: RetryPolicy,
        *,
        jitter: Callable[[], float] = random.random,
        observe: Callable[[str], None] | None = None,
    ) -> None:
        """`observe` hears each attempt's outcome: delivered, retry, gave_up or refused."""
        self._store = store
        self._observe = observe or _unobserved
        self._sender = sender
        self._policy = policy
        self._jitter = jitter
        self._watched: set[str] = set()
        self._lanes: dict[tuple[str, str], deque[Delivery]] = {}
        self._tg: TaskGroup | None = None
        self._intake_send: MemoryObjectSendStream[_Event]
        self._intake_receive: MemoryObjectReceiveStream[_Event]
        self._queued = 0
        self._idle = anyio.Event()
        self._idle.set()

    @property
    def sender(self) -> PushSender:
        return self._sender

    @property
    def store(self) -> PushStore:
        return self._store

    # ----- lifecycle -------------------------------------------------------------------------

    async def open(self) -> None:
        await self._store.open()
        self._watched = await self._store.watched_tasks()

    async def close(self) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self._sender.aclose()
            finally:
                await self._store.close()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Deliver what a previous process left in the outbox, then every new event; runs
        until cancelled (at shutdown, after `flush`). Undelivered rows stay in the outbox."""
        self._intake_send, self._intake_receive = anyio.create_memory_object_stream[_Event](
            math.inf
        )
        pending = await self._store.pending()
        if pending:
            log.info("push.resumed", pending=len(pending))
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                for delivery in pending:
                    self._enqueue(delivery)
                task_status.started()
                await self._intake()
        finally:
            self._tg = None
            self._intake_send.close()
            self._intake_receive.close()

    async def adopt(self, deliveries: list[Delivery]) -> None:
        """Deliver rows another process left (a lost replica's, taken over), and re-read
        which tasks have configs (one may have been set through another replica)."""
        for delivery in deliveries:
            self._enqueue(delivery)
        self._watched |= await self._store.watched_tasks()

    async def flush(self) -> None:
        """Return once every event notified so far is in the outbox."""
        await self._idle.wait()

    # ----- events ----------------------------------------------------------------------------

    def notify(self, run: TaskRun, event: StreamResponse) -> None:
        """Called with each task event, in order; never waits."""
        if run.task.id not in self._watched or self._tg is None:
            return
        self._queued += 1
        self._idle = anyio.Event() if self._idle.is_set() else self._idle
        self._intake_send.send_nowait(_Event(run.principal, run.task.id, event, run.task))

    async def _intake(self) -> None:
        async for item in self._intake_receive:
            try:
                await self._persist(item)
            except Exception:
                log.exception("push.enqueue_failed", task_id=item.task_id)
            finally:
                self._queued -= 1
                if self._queued == 0:
                    self._idle.set()

    async def _persist(self, item: _Event) -> None:
        configs = await self._store.list_configs(item.principal, item.task_id)
        rows = []
        for stored in configs:
            body = _body(stored.version, item.event, item.snapshot)
            if body is not None:
                rows.append(Delivery(0, item.principal, stored.version, stored.config, body))
        for delivery in await self._store.add_deliveries(rows):
            log.info(
                "push.queued",
                task_id=item.task_id,
                config_id=delivery.config.id,
                seq=delivery.seq,
                version=delivery.version,
            )
            self._enqueue(delivery)
        if _ends_task(item.event):
            # Configs last until the task ends; the rows just queued still go out.
            await self._store.delete_task_configs(item.principal, item.task_id)
            self._watched.discard(item.task_id)

    # ----- delivery --------------------------------------------------------------------------

    def _enqueue(self, delivery: Delivery) -> None:
        lane = self._lanes.get(delivery.lane)
        if lane is not None:
            lane.append(delivery)
            return
        if self._tg is None:
            return  # shutting down: the row stays in the outbox for the next start
        self._lanes[delivery.lane] = deque([delivery])
        self._tg.start_soon(self._work, delivery.lane)

    async def _work(self, key: tuple[str, str]) -> None:
        lane = self._lanes[key]
        try:
            while lane:
                await self._deliver(lane[0])
                lane.popleft()
        finally:
            del self._lanes[key]

    async def _deliver(self, delivery: Delivery) -> None:
        """Attempt until delivered, refused or out of attempts; the row leaves the outbox."""
        config = delivery.config
        where = {
            "task_id": config.task_id,
            "config_id": config.id,
            "seq": delivery.seq,
            "version": delivery.version,
        }
        body = delivery.body.encode()
        headers = webhook_headers(config)
        attempt = delivery.attempts
        while attempt < self._policy.max_attempts:
            attempt += 1
            try:
                with anyio.fail_after(self._policy.timeout):
                    await self._sender.send(config.url, body, headers)
            except PushTargetRefusedError as exc:
                log.warning("push.refused", **where, reason=str(exc))
                self._observe("refused")
                break
            except (PushDeliveryError, TimeoutError) as exc:
                error = str(exc) or type(exc).__name__
                await self._store.record_attempt(delivery.seq, attempt)
                if attempt >= self._policy.max_attempts:
                    log.warning("push.gave_up", **where, attempts=attempt, error=error)
                    self._observe("gave_up")
                    break
                delay = self._policy.delay(attempt, self._jitter())
                log.info("push.retry", **where, attempt=attempt, error=error, delay=delay)
                self._observe("retry")
                await anyio.sleep(delay)
            else:
                log.info("push.delivered", **where, attempt=attempt)
                self._observe("delivered")
                break
        await self._store.remove_delivery(delivery.seq)

    # ----- configs ---------------------------------------------------------------------------

    async def put(self, stored: StoredConfig) -> None:
        await self._store.put_config(stored)
        self._watched.add(stored.task_id)

    async def delete(self, principal: str, task_id: str, config_id: str) -> None:
        await self._store.delete_config(principal, task_id, config_id)
        if not await self._store.list_configs(principal, task_id):
            self._watched.discard(task_id)
