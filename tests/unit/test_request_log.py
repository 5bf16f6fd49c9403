"""`bind_request_id`: every log line of a request carries its request_id, one line says how the
request ended, and nothing of it stays bound once the request is over."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import structlog
from aiohttp import web
from aiohttp.test_utils import TestClient
from structlog.testing import LogCapture

from core.bindings.http.app import bind_request_id

Client = Callable[..., Awaitable[TestClient[Any, Any]]]
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
def logs() -> Iterator[LogCapture]:
    """Captured log lines with the bound context merged in, as the daemon's logs have it."""
    config = structlog.get_config()
    capture = LogCapture()
    structlog.configure(processors=[structlog.contextvars.merge_contextvars, capture])
    try:
        yield capture
    finally:
        structlog.configure(**config)


async def test_a_request_is_logged_under_its_own_id_and_unbound_after(
    aiohttp_client: Client, logs: LogCapture
) -> None:
    inside: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []

    @web.middleware
    async def outer(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        after.append(structlog.contextvars.get_contextvars())
        return response

    async def handler(request: web.Request) -> web.Response:
        inside.append(structlog.contextvars.get_contextvars())
        return web.Response(status=202)

    app = web.Application(middlewares=[outer, bind_request_id])
    app.router.add_get("/x", handler)
    client = await aiohttp_client(app)
    for _ in range(2):
        assert (await client.get("/x")).status == 202
    ids = [bound["request_id"] for bound in inside]
    assert len(set(ids)) == 2 and all(len(i) == 12 for i in ids)
    ended = [e for e in logs.entries if e["event"] == "http.request"]
    assert [(e["request_id"], e["path"], e["status"]) for e in ended] == [
        (i, "/x", 202) for i in ids
    ]
    assert after == [{}, {}]
