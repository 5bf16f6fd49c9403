"""Engine behaviour through the real app: lanes, shutdown, keep-alives, disconnects, retention."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from core.backend import BackendEvent, Health, NeedsInput, Text, Turn
from core.bindings.http.keys import SERVICE
from core.storage.memory import InMemoryTaskStore
from core.wire.enums import TaskState
from core.wire.errors import UnsupportedOperationError
from core.wire.models import Message, Part, SendMessageRequest, Task, TaskStatus
from tests.conftest import Client, MakeClient, make_settings
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, call, rpc, user_message


async def _start(client: Client, text: str, **extra: object) -> str:
    body = await call(
        client,
        "SendMessage",
        {
            "message": user_message(text, **extra),
            "configuration": {"returnImmediately": True},
        },
    )
    task_id: str = body["result"]["task"]["id"]
    return task_id


async def test_turns_of_one_context_queue_fifo(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client()
    first = await _start(client, "block", contextId="c", messageId="m1")
    await backend.entered(first).wait()
    second = await _start(client, "echo: next", contextId="c", messageId="m2")
    other = await _start(client, "echo: elsewhere", contextId="d", messageId="m3")
    # A stream on the queued task starts at once with the task, before the lane frees.
    stream = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": second})
    )
    line = await stream.content.readline()
    assert b'"TASK_STATE_SUBMITTED"' in line
    queued = await call(client, "GetTask", {"id": second})
    assert queued["result"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    with anyio.fail_after(5):
        await _until_state(client, other, "TASK_STATE_COMPLETED")
    backend.release(first)
    with anyio.fail_after(5):
        await _until_state(client, second, "TASK_STATE_COMPLETED")
    stream.close()
    assert [t.message_id for t in backend.turns if t.context_id == "c"] == ["m1", "m2"]


async def _until_state(client: Client, task_id: str, state: str) -> None:
    """Follow the task's own stream until it reports `state` (no polling)."""
    response = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
    )
    if response.content_type == "application/json":  # already terminal
        body = await call(client, "GetTask", {"id": task_id})
        assert body["result"]["status"]["state"] == state
        return
    async for raw in response.content:
        if state.encode() in raw:
            response.close()
            return
    raise AssertionError(f"stream ended before {state}")


async def test_shutdown_fails_running_turns_and_stops_backend(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    store = InMemoryTaskStore()
    client = await make_client(make_settings(server={"shutdownTimeout": 100}), store=store)
    task_id = await _start(client, "block")
    await backend.entered(task_id).wait()
    await client.close()
    task = await store.get("anonymous", task_id)
    assert task is not None
    assert task.status.state == TaskState.FAILED
    assert task.status.message is not None
    assert "shut down" in (task.status.message.parts[0].text or "")
    assert backend.interrupted == [task_id]
    assert backend.closed


async def test_shutdown_lets_a_running_turn_finish_within_the_timeout(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    store = InMemoryTaskStore()
    client = await make_client(make_settings(server={"shutdownTimeout": 10_000}), store=store)
    service = client.app[SERVICE]
    task_id = await _start(client, "block")
    await backend.entered(task_id).wait()

    async with anyio.create_task_group() as tg:
        tg.start_soon(client.close)
        with anyio.fail_after(5):
            await service.wait_draining()
        late = SendMessageRequest(
            message=Message(message_id="late", role="ROLE_USER", parts=[Part(text="echo: x")])
        )
        with pytest.raises(UnsupportedOperationError, match="shutting down"):
            await service.send("anonymous", late)
        backend.release(task_id)

    task = await store.get("anonymous", task_id)
    assert task is not None
    assert task.status.state == TaskState.COMPLETED
    assert backend.interrupted == []


async def test_keep_alive_pings_while_idle(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(server={"ssePingInterval": 100}))
    task_id = await _start(client, "block")
    await backend.entered(task_id).wait()
    response = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
    )
    with anyio.fail_after(5):
        async for raw in response.content:
            if raw.startswith(b": ping"):
                break
    backend.release(task_id)
    response.close()


async def test_client_disconnect_never_cancels(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client()
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("block")}),
    )
    first = await response.content.readline()
    task_id = first.split(b'"id":"')[1].split(b'"')[0].decode()
    await backend.entered(task_id).wait()
    response.close()
    backend.release(task_id)
    with anyio.fail_after(5):
        await _until_state(client, task_id, "TASK_STATE_COMPLETED")
    assert backend.interrupted == []


async def test_retention_sweep_runs_at_start(make_client: MakeClient) -> None:
    store = InMemoryTaskStore()
    old = datetime.now(UTC) - timedelta(days=30)
    for task_id, state in (
        ("old-done", TaskState.COMPLETED),
        ("old-waiting", TaskState.INPUT_REQUIRED),
    ):
        await store.save(
            "anonymous",
            Task(id=task_id, context_id="c", status=TaskStatus(state=state, timestamp=old)),
        )
    client = await make_client(make_settings(storage={"retention": 24 * 3600 * 1000}), store=store)
    gone = await call(client, "GetTask", {"id": "old-done"})
    assert gone["error"]["code"] == -32001
    kept = await call(client, "GetTask", {"id": "old-waiting"})
    assert kept["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_shutdown_ends_open_streams_and_fails_queued_turns(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    store = InMemoryTaskStore()
    client = await make_client(make_settings(server={"shutdownTimeout": 100}), store=store)
    asked = await call(client, "SendMessage", {"message": user_message("ask: q?", contextId="a")})
    waiting = asked["result"]["task"]["id"]
    running = await _start(client, "block", contextId="c", messageId="m1")
    await backend.entered(running).wait()
    queued = await _start(client, "echo: later", contextId="c", messageId="m2")
    watch_waiting = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": waiting})
    )
    watch_running = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": running})
    )
    await watch_waiting.content.readline()
    await watch_running.content.readline()
    with anyio.fail_after(5):  # far below the 10 s request timeout the streams would cost
        await client.server.close()
        assert b"TASK_STATE_FAILED" in await watch_running.content.read()
        await watch_waiting.content.read()
    for task_id, state in (
        (running, TaskState.FAILED),
        (queued, TaskState.FAILED),
        (waiting, TaskState.INPUT_REQUIRED),
    ):
        task = await store.get("anonymous", task_id)
        assert task is not None
        assert task.status.state == state, task_id
    assert [t.message_id for t in backend.turns if t.context_id == "c"] == ["m1"]


async def test_store_failure_in_a_turn_does_not_stop_the_service(make_client: MakeClient) -> None:
    class DiskFull(InMemoryTaskStore):
        async def save(self, principal: str, task: Task) -> None:
            if task.context_id == "doomed" and task.status.state != TaskState.SUBMITTED:
                raise OSError("disk full")
            await super().save(principal, task)

    client = await make_client(store=DiskFull())
    doomed = await call(
        client, "SendMessage", {"message": user_message("echo: x", contextId="doomed")}
    )
    assert "result" in doomed or doomed["error"]["code"] == -32603
    fine = await call(
        client, "SendMessage", {"message": user_message("echo: fine", messageId="m2")}
    )
    assert fine["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_healthz_reports_the_backend(make_client: MakeClient) -> None:
    client = await make_client()
    response = await client.get("/healthz")
    assert response.status == 200
    assert await response.json() == {"status": "ok", "backend": "scripted"}

    class Sick(ScriptedBackend):
        async def health(self) -> Health:
            return Health(ok=False, detail="claude binary not found")

    sick = await make_client(backend_=Sick())
    response = await sick.get("/healthz")
    assert response.status == 503
    body = await response.json()
    assert body["reason"] == "backend_unhealthy"
    assert body["message"] == f"The scripted backend is not healthy (error id {body['errorId']})."
    # No token is needed for /ready: the backend's own text goes to the log only.
    assert "claude binary not found" not in await response.text()


async def test_backend_generator_closed_when_turn_ends_early(make_client: MakeClient) -> None:
    tasks: list[asyncio.Task[object] | None] = []

    class Tracking(ScriptedBackend):
        async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
            tasks.append(asyncio.current_task())
            try:
                yield NeedsInput("which one?")
                yield Text("never reached")
            finally:
                # Closed by the turn itself, not later by a garbage-collection finalizer task.
                tasks.append(asyncio.current_task())

    client = await make_client(backend_=Tracking())
    body = await call(client, "SendMessage", {"message": user_message("anything")})
    task = body["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert len(tasks) == 2
    assert tasks[0] is tasks[1]
