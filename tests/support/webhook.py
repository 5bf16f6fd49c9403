"""A real webhook receiver: an aiohttp server on 127.0.0.1, port 0, that records every POST.

`fail_next` answers that many requests with 500 first; `hold` makes every request wait until
released (a receiver that never answers in time); `delivered` holds only the accepted ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestServer

WAIT = 10.0  # s: a bound on waiting for deliveries, so a broken test fails rather than hangs


@dataclass
class Received:
    headers: dict[str, str]
    body: Any
    status: int


@dataclass
class Webhook:
    url: str = ""
    fail_next: int = 0
    hold: asyncio.Event | None = None
    received: list[Received] = field(default_factory=list)
    _arrived: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def delivered(self) -> list[Any]:
        return [r.body for r in self.received if r.status == 200]

    async def handle(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read())
        if self.hold is not None:
            self.received.append(Received(dict(request.headers), body, 0))
            self._arrived.set()
            await self.hold.wait()
            return web.Response(status=200)
        status = 500 if self.fail_next > 0 else 200
        self.fail_next -= 1 if self.fail_next > 0 else 0
        self.received.append(Received(dict(request.headers), body, status))
        self._arrived.set()
        return web.Response(status=status)

    async def wait_delivered(self, count: int) -> list[Any]:
        """The accepted bodies, once at least `count` arrived."""
        async with asyncio.timeout(WAIT):
            while len(self.delivered) < count:
                self._arrived.clear()
                await self._arrived.wait()
        return self.delivered

    async def wait_received(self, count: int) -> None:
        async with asyncio.timeout(WAIT):
            while len(self.received) < count:
                self._arrived.clear()
                await self._arrived.wait()


async def serve_webhook() -> AsyncIterator[Webhook]:
    hook = Webhook()
    app = web.Application()
    app.router.add_post("/hook", hook.handle)
    server = TestServer(app, host="127.0.0.1", port=0)
    await server.start_server()
    hook.url = str(server.make_url("/hook"))
    try:
        yield hook
    finally:
        if hook.hold is not None:
            hook.hold.set()
        await server.close()
