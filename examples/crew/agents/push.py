"""Push where offered: a loopback webhook that wakes the crew when a remote task changes.

One `PushReceiver` per job, on 127.0.0.1 port 0, with a token of its own: every remote task
the job sends to a push-capable agent names `<url>/push/<job>` and that token, and a
notification without the token (`X-A2A-Notification-Token`) or for another job is refused
(401/404) and counted. A notification is only a hint, never the truth: it wakes whoever
waits on its task, and only a state that would end the wait (terminal, or input needed) makes
the waiter look, with GetTask. So a task followed by push costs one GetTask when nothing
is lost; the waiter still looks after `fallback` seconds without a word (a lost
notification), so polling stays the floor.
"""

from __future__ import annotations

import hmac
import json
import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import anyio
from aiohttp import web

TOKEN_HEADER = "X-A2A-Notification-Token"  # noqa: S105 - a header name, not a secret
SETTLED = frozenset(
    {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_AUTH_REQUIRED",
    }
)
MAX_BODY = 4 * 1024 * 1024


@dataclass
class PushCounts:
    received: int = 0
    refused: int = 0


def _settling(doc: object) -> tuple[str, bool] | None:
    """(task id, whether its state ends a wait) from a v1.0 StreamResponse body; None when it
    names no task. An unreadable state counts as settling (the waiter looks: safe side)."""
    if not isinstance(doc, dict):
        return None
    for key in ("statusUpdate", "task"):
        part = doc.get(key)
        if isinstance(part, dict):
            task_id = part.get("taskId") if key == "statusUpdate" else part.get("id")
            status = part.get("status")
            state = status.get("state") if isinstance(status, dict) else None
            if isinstance(task_id, str):
                return task_id, not isinstance(state, str) or state in SETTLED
    if doc.get("kind") == "task" and isinstance(doc.get("id"), str):  # v0.3: the whole task
        status = doc.get("status")
        state = status.get("state") if isinstance(status, dict) else None
        v03 = f"TASK_STATE_{state.upper().replace('-', '_')}" if isinstance(state, str) else None
        return str(doc["id"]), v03 is None or v03 in SETTLED
    update = doc.get("artifactUpdate")
    if isinstance(update, dict) and isinstance(update.get("taskId"), str):
        return str(update["taskId"]), False
    return None


class PushReceiver:
    def __init__(self, job_id: str) -> None:
        self.job_id = job_id
        self.token = secrets.token_urlsafe(24)
        self.url = ""
        self.counts = PushCounts()
        self._wake: dict[str, anyio.Event] = {}

    def webhook(self) -> str:
        return f"{self.url}/push/{self.job_id}"

    def _event(self, task_id: str) -> anyio.Event:
        return self._wake.setdefault(task_id, anyio.Event())

    async def wait(self, task_id: str, patience: float) -> bool:
        """Until a notification says the task may have settled (True), or `patience` seconds
        went by without one (False)."""
        with anyio.move_on_after(patience):
            await self._event(task_id).wait()
            self._wake[task_id] = anyio.Event()
            return True
        return False

    async def _handle(self, request: web.Request) -> web.Response:
        given = request.headers.get(TOKEN_HEADER, "")
        if request.match_info["job"] != self.job_id:
            self.counts.refused += 1
            return web.Response(status=404)
        if not hmac.compare_digest(given.encode(), self.token.encode()):
            self.counts.refused += 1
            return web.Response(status=401)
        try:
            doc = json.loads(await request.read())
        except ValueError:
            self.counts.refused += 1
            return web.Response(status=400)
        self.counts.received += 1
        found = _settling(doc)
        if found is not None and found[1]:
            self._event(found[0]).set()
        return web.Response(status=204)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[PushReceiver]:
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/push/{job}", self._handle)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        try:
            yield self
        finally:
            with anyio.CancelScope(shield=True):
                await runner.cleanup()
