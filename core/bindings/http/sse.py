"""Server-Sent Events: one `data:` line of JSON per event, keep-alive comments while idle.

The stream ends when the event source ends. A client that goes away only ends this response;
the task behind it keeps running.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import anyio
from aiohttp import web

from core.wire import strict_json

SSE_HEADERS = {
    "Content-Type": "text/event-stream",
    "Cache-Control": "no-store",
    "X-Accel-Buffering": "no",
}


def frame(data: dict[str, Any], event: str | None = None) -> bytes:
    head = f"event: {event}\r\n" if event else ""
    return f"{head}data: {strict_json.dumps(data, compact=True)}\r\n\r\n".encode()


async def stream_events(
    request: web.Request,
    frames: AsyncIterator[bytes],
    *,
    ping_interval: float,
    headers: dict[str, str] | None = None,
) -> web.StreamResponse:
    """Send each frame as it comes; a `: ping` comment every `ping_interval` seconds."""
    response = web.StreamResponse(status=200, headers={**SSE_HEADERS, **(headers or {})})
    await response.prepare(request)
    lock = anyio.Lock()

    async def ping() -> None:
        while True:
            await anyio.sleep(ping_interval)
            async with lock:
                stamp = datetime.now(UTC).isoformat()
                await response.write(f": ping - {stamp}\r\n\r\n".encode())

    gone = False
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ping)
            async for chunk in frames:
                async with lock:
                    await response.write(chunk)
            tg.cancel_scope.cancel()
    except* ConnectionError:  # the client went away (from either writer); the task goes on
        gone = True
    if not gone:
        with contextlib.suppress(ConnectionError):
            await response.write_eof()
    return response
