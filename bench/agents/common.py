"""What the per-backend agent benches share: the timing row, the chat completions mock in a
thread of its own (for `bench.turns`, which runs the daemon as a process), and the real app on
127.0.0.1 driven with blocking SendMessage. (The older benches keep copies of their own.)"""

from __future__ import annotations

import asyncio
import statistics
import threading
import uuid
from collections.abc import Callable

import aiohttp
from aiohttp import web

from core.daemon import create_app
from core.settings import Settings
from harness.mock_models.openai_chat import OpenAIChatMock

V1 = {"A2A-Version": "1.0"}


def row(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p90 = ordered[max(0, int(len(ordered) * 0.9) - 1)]
    return (
        f"  {name:<16} median {statistics.median(ordered) * 1000:7.0f} ms   "
        f"p90 {p90 * 1000:7.0f} ms   min {ordered[0] * 1000:7.0f} ms   (n={len(ordered)})"
    )


def serve_chat_mock() -> tuple[str, Callable[[], None]]:
    """The chat completions mock in a thread of its own: its base URL and a stop function."""
    ready = threading.Event()
    url: list[str] = []
    stop_event: list[asyncio.Event] = []
    loop = asyncio.new_event_loop()

    async def serve() -> None:
        async with OpenAIChatMock() as mock:
            url.append(mock.base_url)
            stop_event.append(asyncio.Event())
            ready.set()
            await stop_event[0].wait()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    if not ready.wait(30):
        raise RuntimeError("the mock model did not start")

    def stop() -> None:
        loop.call_soon_threadsafe(stop_event[0].set)
        thread.join(30)
        loop.close()

    return url[0], stop


class DaemonApp:
    """The real app on 127.0.0.1 (port 0), driven over HTTP with blocking SendMessage."""

    def __init__(self, settings: Settings) -> None:
        self.runner = web.AppRunner(create_app(settings))
        self.url = ""
        self.http: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        await self.runner.setup()  # starts the backend
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}/a2a/jsonrpc"
        self.http = aiohttp.ClientSession()

    async def send(self, text: str, context: str) -> None:
        """One blocking SendMessage on `context`; raises unless the task COMPLETED."""
        if self.http is None:
            raise RuntimeError("start() first")
        message = {
            "messageId": str(uuid.uuid4()),
            "contextId": context,
            "role": "ROLE_USER",
            "parts": [{"text": text}],
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
        async with self.http.post(self.url, json=body, headers=V1) as response:
            reply = await response.json()
        state = reply["result"]["task"]["status"]["state"]
        if state != "TASK_STATE_COMPLETED":
            raise RuntimeError(f"turn ended {state}: {reply}")

    async def stop(self) -> None:
        if self.http is not None:
            await self.http.close()
        await self.runner.cleanup()
