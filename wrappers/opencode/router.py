"""One reader of the server's `/event` stream, fanning events out by session id.

Turns subscribe to their session before they prompt, so no event of theirs is missed. When the
stream ends (the server exited or dropped the connection) every subscriber gets one `Lost`
marker with the reason, and its turn fails instead of waiting forever.
"""

from __future__ import annotations

import math
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

import aiohttp
import anyio
import structlog
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from wrappers.opencode.client import OpencodeClient

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Lost:
    """The event stream ended: the server is gone (or restarting)."""

    reason: str


Item = dict[str, Any] | Lost


def session_of(event: dict[str, Any]) -> str | None:
    """The session an event belongs to (`properties.sessionID`, or in its info or part)."""
    props = event.get("properties")
    if not isinstance(props, dict):
        return None
    candidates = [props.get("sessionID")]
    for key in ("info", "part"):
        nested = props.get(key)
        if isinstance(nested, dict):
            candidates.append(nested.get("sessionID"))
    return next((c for c in candidates if isinstance(c, str)), None)


class Subscription:
    """The events of one session, in order, from subscription until `close()`."""

    def __init__(self, router: EventRouter, session_id: str) -> None:
        self.session_id = session_id
        self._router = router
        send: MemoryObjectSendStream[Item]
        receive: MemoryObjectReceiveStream[Item]
        # Unbounded: the one shared reader must never wait on a slow turn.
        send, receive = anyio.create_memory_object_stream[Item](math.inf)
        self._send = send
        self._receive = receive

    def deliver(self, item: Item) -> None:
        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._send.send_nowait(item)

    async def receive(self) -> Item:
        return await self._receive.receive()

    def close(self) -> None:
        self._router.unsubscribe(self)
        self._send.close()
        self._receive.close()


class EventRouter:
    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}

    def subscribe(self, session_id: str) -> Subscription:
        subscription = Subscription(self, session_id)
        self._subscribers.setdefault(session_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        subscribers = self._subscribers.get(subscription.session_id)
        if subscribers is not None:
            subscribers.discard(subscription)
            if not subscribers:
                del self._subscribers[subscription.session_id]

    def lose_all(self, reason: str) -> None:
        """Tell every subscriber that its events stopped (and why)."""
        for subscribers in list(self._subscribers.values()):
            for subscription in list(subscribers):
                subscription.deliver(Lost(reason))

    async def pump(
        self, client: OpencodeClient, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Read `/event` until it ends; ready (for `tg.start`) once the server said hello.

        Returns when the stream ends or breaks; the caller decides whether that is a crash.
        """
        started = False
        try:
            async for event in client.events():
                if not started and event.get("type") == "server.connected":
                    started = True
                    task_status.started()
                    continue
                session_id = session_of(event)
                if session_id is None:
                    continue
                for subscription in list(self._subscribers.get(session_id, ())):
                    subscription.deliver(event)
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            if not started:
                raise
            log.warning("opencode.events_broken", error=str(exc))
        if not started:
            raise OSError("the OpenCode event stream ended before it started")
