"""Connection guards under aiohttp's protocol handler: a cap on open connections (in all and
per client address) and a deadline for a connection's first request head.

aiohttp already closes a connection that stays idle for `keepalive_timeout` (counted from the
connection's start, then from the end of each response, so a half-sent later request is bound
by it too), but it has no cap, and its one timer is the idle one. `GuardedSite` serves the
runner's protocol factory through `ConnectionGuard`, which wraps every connection:

- beyond `max_connections` open connections, or `max_per_client` from one address, a new
  connection gets a 503 and is closed at once, before aiohttp sees it;
- a connection that has not sent a complete request head `header_timeout` seconds after it was
  accepted is closed (slowloris: connections that send nothing, or a byte at a time).

What they refuse is counted in a `LogSummary`, not logged one line per connection.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from core.api.ratelog import LogSummary

_BODY = json.dumps(
    {
        "error": {
            "code": 503,
            "status": "UNAVAILABLE",
            "message": "The server has too many open connections; try again later.",
        }
    }
).encode()
REFUSED = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
    b"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(_BODY), _BODY)
)
_HEAD_ENDS = (b"\r\n\r\n", b"\n\n")


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    max_per_client: int  # 0: no own limit
    header_timeout: float  # s; 0: none


class ConnectionGuard:
    """The protocol factory given to the listening socket: counts open connections and wraps
    each in a `_GuardedConnection`. Event-loop thread only."""

    def __init__(
        self,
        factory: Callable[[], asyncio.Protocol],
        limits: ConnectionLimits,
        summary: LogSummary,
    ) -> None:
        self._factory = factory
        self.limits = limits
        self.summary = summary
        self.open = 0
        self._per_client: Counter[str] = Counter()

    def __call__(self) -> asyncio.Protocol:
        return _GuardedConnection(self)

    def admit(self, client: str) -> bool:
        limits = self.limits
        if self.open >= limits.max_connections:
            self.summary.note("http.connection_refused", key="total", first=False)
            return False
        if limits.max_per_client and self._per_client[client] >= limits.max_per_client:
            self.summary.note("http.connection_refused", key="per_client", first=False)
            return False
        self.open += 1
        self._per_client[client] += 1
        return True

    def release(self, client: str) -> None:
        self.open -= 1
        self._per_client[client] -= 1
        if self._per_client[client] <= 0:
            del self._per_client[client]

    def handler(self) -> asyncio.Protocol:
        return self._factory()


class _GuardedConnection(asyncio.Protocol):
    """Stands between the transport and aiohttp's handler for one connection; forwards every
    callback once admitted."""

    def __init__(self, guard: ConnectionGuard) -> None:
        self._guard = guard
        self._inner: asyncio.Protocol | None = None
        self._transport: asyncio.Transport | None = None
        self._client = ""
        self._deadline: asyncio.TimerHandle | None = None
        self._tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        if not isinstance(transport, asyncio.Transport):
            raise TypeError("a stream transport was expected")  # create_server gives one
        peer = transport.get_extra_info("peername")
        self._client = str(peer[0]) if isinstance(peer, tuple) and peer else ""
        if not self._guard.admit(self._client):
            transport.write(REFUSED)
            transport.close()
            return
        self._transport = transport
        timeout = self._guard.limits.header_timeout
        if timeout > 0:
            loop = asyncio.get_running_loop()
            self._deadline = loop.call_later(timeout, self._header_overdue)
        self._inner = self._guard.handler()
        self._inner.connection_made(transport)

    def _header_overdue(self) -> None:
        self._deadline = None
        self._guard.summary.note("http.header_timeout", first=False)
        if self._transport is not None:
            self._transport.abort()

    def data_received(self, data: bytes) -> None:
        if self._inner is None:
            return
        if self._deadline is not None:
            seen = self._tail + data
            if any(end in seen for end in _HEAD_ENDS):
                self._deadline.cancel()
                self._deadline = None
                self._tail = b""
            else:
                self._tail = seen[-3:]
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received() if self._inner is not None else None

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        inner, self._inner = self._inner, None
        if inner is None:
            return
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self._transport = None
        self._guard.release(self._client)
        inner.connection_lost(exc)


class GuardedSite(web.BaseSite):
    """A TCP site whose connections go through a `ConnectionGuard` (aiohttp's TCPSite gives
    the runner's server to the socket directly)."""

    def __init__(
        self,
        runner: web.BaseRunner,
        host: str,
        port: int,
        limits: ConnectionLimits,
        summary: LogSummary,
    ) -> None:
        super().__init__(runner)
        server = runner.server
        if server is None:  # BaseSite.__init__ already refused it; this narrows the type
            raise RuntimeError("Call runner.setup() before making a site")
        self._host = host
        self._port = port
        self.guard = ConnectionGuard(server, limits, summary)

    @property
    def name(self) -> str:
        shown = f"[{self._host}]" if ":" in self._host else self._host
        return f"http://{shown}:{self._port}"

    async def start(self) -> None:
        await super().start()
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(
            self.guard, self._host, self._port, backlog=self._backlog
        )
