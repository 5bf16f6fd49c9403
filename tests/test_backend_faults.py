"""A misbehaving backend ends only its own turn (issue 17, items 2 and 7).

On the real daemon process: an `interrupt()` that raises still cancels (the cancel answers
CANCELED, the blocking sender and the subscriber get that state, the context's next turn runs);
a `run_turn` raising SystemExit, KeyboardInterrupt or GeneratorExit fails that task with an
error id while another context's turn goes on and the daemon keeps serving. Through the
service: an interrupt that hangs past its bound is handled the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from core.engine.config import EngineConfig, Timeouts
from core.engine.service import TaskService
from core.storage.memory import InMemoryTaskStore
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
)
from tests.support.daemon import Daemon
from tests.support.errors import ERROR_ID, SECRET
from tests.support.faulty_backend import FaultyBackend

V1 = {"A2A-Version": "1.0"}
MakeDaemon = Callable[..., Daemon]
WAIT = 20  # s: a deadline for what should take milliseconds


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[MakeDaemon]:
    made: list[Daemon] = []

    def make(**options: Any) -> Daemon:
        config = {
            "backend": "tests.support.faulty_backend:FaultyBackend",
            "options": options,
            "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        }
        made.append(Daemon(config, tmp_path))
        return made[-1]

    yield make
    for daemon in made:
        daemon.close()


class Rpc:
    def __init__(self, session: aiohttp.ClientSession, url: str) -> None:
        self._session = session
        self._url = f"{url}/a2a/jsonrpc"

    async def __call__(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        async with self._session.post(self._url, json=body, headers=V1) as response:
            reply: dict[str, Any] = await response.json()
        assert "result" in reply, reply
        result: dict[str, Any] = reply["result"]
        return result

    async def send(self, text: str, context_id: str, *, now: bool = False) -> dict[str, Any]:
        params: dict[str, Any] = {
            "message": {
                "messageId": f"m-{text}-{time.monotonic_ns()}",
                "role": "ROLE_USER",
                "contextId": context_id,
                "parts": [{"text": text}],
            }
        }
        if now:
            params["configuration"] = {"returnImmediately": True}
        task: dict[str, Any] = (await self("SendMessage", params))["task"]
        return task

    async def await_state(self, task_id: str, state: str) -> dict[str, Any]:
        with anyio.fail_after(WAIT):
            while True:
                task = await self("GetTask", {"id": task_id})
                if task["status"]["state"] == state:
                    return task
                await anyio.sleep(0.05)

    async def working_task(self, context_id: str) -> str:
        """The id of the context's task once it is WORKING (a blocking send hides it)."""
        with anyio.fail_after(WAIT):
            while True:
                listed = await self("ListTasks", {"contextId": context_id})
                working = [
                    t for t in listed["tasks"] if t["status"]["state"] == "TASK_STATE_WORKING"
                ]
                if working:
                    task_id: str = working[0]["id"]
                    return task_id
                await anyio.sleep(0.05)

    async def subscribe(self, task_id: str) -> AsyncIterator[dict[str, Any]]:
        """SubscribeToTask's events as they arrive (the stream ends at the final state)."""
        body = {"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": task_id}}
        async with self._session.post(self._url, json=body, headers=V1) as response:
            async for line in response.content:
                if line.startswith(b"data: "):
                    event: dict[str, Any] = json.loads(line[len(b"data: ") :])["result"]
                    yield event


def _text(status: dict[str, Any]) -> str:
    text: str = status["message"]["parts"][0]["text"]
    return text


def _logged(daemon: Daemon, event: str, error_id: str) -> dict[str, Any]:
    """The daemon's JSON log line `event` carrying `error_id` (waits for it to be written)."""
    deadline = time.monotonic() + 10
    while True:
        for line in daemon.log_path.read_text().splitlines():
            if line.startswith("{"):
                entry: dict[str, Any] = json.loads(line)
                if entry.get("event") == event and entry.get("error_id") == error_id:
                    return entry
        assert time.monotonic() < deadline, f"{event} with {error_id} never logged"
        time.sleep(0.05)


@pytest.mark.parametrize("interrupt", ["raise", "exit"])
async def test_a_raising_interrupt_still_cancels_the_task(
    daemons: MakeDaemon, interrupt: str
) -> None:
    daemon = daemons(interrupt=interrupt)
    url = daemon.start()
    async with aiohttp.ClientSession() as session, anyio.create_task_group() as tg:
        rpc = Rpc(session, url)
        answers: dict[str, dict[str, Any]] = {}
        answered = anyio.Event()

        async def blocking_send() -> None:
            answers["sender"] = await rpc.send("block", "ctx-1")
            answered.set()

        tg.start_soon(blocking_send)
        task_id = await rpc.working_task("ctx-1")
        events = rpc.subscribe(task_id)
        assert (await anext(events))["task"]["id"] == task_id

        with anyio.fail_after(30):
            canceled = await rpc("CancelTask", {"id": task_id})
            seen = [event async for event in events]
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
        said = _text(canceled["status"])
        match = ERROR_ID.search(said)
        assert match, said
        error_id = match.group(1)
        assert SECRET not in said
        assert seen[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
        with anyio.fail_after(10):
            await answered.wait()
        assert answers["sender"]["status"]["state"] == "TASK_STATE_CANCELED"

        # The lane is free: the context's next turn runs.
        with anyio.fail_after(10):
            following = await rpc.send("echo: next", "ctx-1")
        assert following["status"]["state"] == "TASK_STATE_COMPLETED"

    entry = _logged(daemon, "turn.interrupt_failed", error_id)
    assert (SECRET if interrupt == "raise" else "SystemExit") in entry["exception"]
    assert daemon.stop() == 0


RAISED = {
    "exit": "SystemExit",
    "keyboard": "KeyboardInterrupt",
    "genexit": "GeneratorExit",
    # An ordinary exception quoting a key: the caller gets the same sentence, never the text.
    "leak": SECRET,
}


@pytest.mark.parametrize("command", list(RAISED))
async def test_a_backend_raising_base_exception_fails_only_its_turn(
    daemons: MakeDaemon, command: str
) -> None:
    daemon = daemons()
    url = daemon.start()
    async with aiohttp.ClientSession() as session:
        rpc = Rpc(session, url)
        other = await rpc.send("block", "ctx-other", now=True)
        await rpc.await_state(other["id"], "TASK_STATE_WORKING")

        with anyio.fail_after(20):
            failed = await rpc.send(command, "ctx-bad")
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        said = _text(failed["status"])
        match = ERROR_ID.search(said)
        assert match, said
        error_id = match.group(1)
        assert said.startswith("The agent failed")
        assert SECRET not in said

        # The other context's turn is still running, and the daemon serves new turns.
        still = await rpc("GetTask", {"id": other["id"]})
        assert still["status"]["state"] == "TASK_STATE_WORKING"
        with anyio.fail_after(10):
            fresh = await rpc.send("echo: still here", "ctx-bad")
        assert fresh["status"]["state"] == "TASK_STATE_COMPLETED"
        canceled = await rpc("CancelTask", {"id": other["id"]})
        assert canceled["status"]["state"] == "TASK_STATE_CANCELED"

    entry = _logged(daemon, "turn.failed", error_id)
    assert RAISED[command] in entry["exception"]
    assert daemon.stop() == 0


def _request(text: str, context_id: str) -> SendMessageRequest:
    message = Message(
        message_id=f"m-{text}", role="ROLE_USER", parts=[Part(text=text)], context_id=context_id
    )
    return SendMessageRequest(
        message=message, configuration=SendMessageConfiguration(return_immediately=True)
    )


async def test_an_interrupt_that_hangs_past_its_bound_still_cancels() -> None:
    backend = FaultyBackend({"interrupt": "hang"})
    service = TaskService(InMemoryTaskStore(), backend, EngineConfig(timeouts=Timeouts(cancel=0.3)))
    async with service.running():
        first = await service.send("p", _request("block", "c"))
        assert isinstance(first, Task)
        await backend.entered(first.id).wait()
        with anyio.fail_after(10):
            canceled = await service.cancel("p", CancelTaskRequest(id=first.id))
        assert canceled.status.state.value == "TASK_STATE_CANCELED"
        assert canceled.status.message is not None
        assert ERROR_ID.search(canceled.status.message.parts[0].text or "")

        following = await service.send("p", _request("echo: next", "c"))
        assert isinstance(following, Task)
        with anyio.fail_after(10):
            while True:
                task = await service.get("p", GetTaskRequest(id=following.id))
                if task.status.state.terminal:
                    break
                await anyio.sleep(0.01)
        assert task.status.state.value == "TASK_STATE_COMPLETED"
