"""Per-task ordered fan-out of stream events.

Every subscriber of a task receives every event published after it subscribed, in publish
order. Publishing never waits: each subscriber has its own bounded buffer, and a subscriber that
falls too far behind is dropped (its iterator ends with `SubscriberOverflowError`) rather than
slowing the task or other subscribers. Closing one subscription affects nothing else.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from types import TracebackType

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from core.wire.models import StreamResponse

SUBSCRIBER_BUFFER = 4096


class SubscriberOverflowError(Exception):
    """The subscriber did not keep up with its task's events."""


class Subscription:
    """An async iterator of a task's events; use as an async context manager."""

    def __init__(
        self,
        broker: TaskBroker,
        send: MemoryObjectSendStream[StreamResponse | None],
        receive: MemoryObjectReceiveStream[StreamResponse | None],
    ) -> None:
        self._broker = broker
        self._send = send
        self._receive = receive

    def __aiter__(self) -> AsyncIterator[StreamResponse]:
        return self._events()

    async def _events(self) -> AsyncIterator[StreamResponse]:
        async for item in self._receive:
            if item is None:
                raise SubscriberOverflowError
            yield item

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._broker._forget(self._send)
        self._send.close()
        self._receive.close()


class TaskBroker:
    def __init__(self) -> None:
        self._subscribers: list[MemoryObjectSendStream[StreamResponse | None]] = []
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def has_subscribers(self) -> bool:
        return bool(self._subscribers)

    def subscribe(self, first: StreamResponse | None = None) -> Subscription:
        """Subscribe; `first` (usually a Task snapshot) is delivered before any later event.

        Taking a snapshot and subscribing in the same synchronous step guarantees no event
        falls between the two.
        """
        send, receive = anyio.create_memory_object_stream[StreamResponse | None](math.inf)
        if first is not None:
            send.send_nowait(first)
        if self._closed:
            send.close()
        else:
            self._subscribers.append(send)
        return Subscription(self, send, receive)

    def publish(self, event: StreamResponse) -> None:
        for send in list(self._subscribers):
            try:
                if send.statistics().current_buffer_used >= SUBSCRIBER_BUFFER:
                    send.send_nowait(None)
                    self._forget(send)
                    send.close()
                else:
                    send.send_nowait(event)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                self._forget(send)

    def close(self) -> None:
        """End every subscription after the events already published."""
        self._closed = True
        for send in self._subscribers:
            send.close()
        self._subscribers.clear()

    def _forget(self, send: MemoryObjectSendStream[StreamResponse | None]) -> None:
        if send in self._subscribers:
            self._subscribers.remove(send)
