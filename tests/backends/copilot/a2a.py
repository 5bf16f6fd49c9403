"""A2A calls the Copilot e2e tests make (JSON-RPC, A2A v1.0), and what they read back."""

from __future__ import annotations

import uuid
from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.wire import V1, call, rpc, sse_events, user_message

Client = TestClient[Any, Any]
Task = dict[str, Any]


def message(text: str, context_id: str) -> dict[str, Any]:
    return user_message(text, contextId=context_id, messageId=str(uuid.uuid4()))


async def send(client: Client, text: str, context_id: str = "ctx") -> Task:
    """SendMessage, blocking until the task ends."""
    body = await call(client, "SendMessage", {"message": message(text, context_id)})
    assert "result" in body, body
    task: Task = body["result"]["task"]
    return task


async def start(client: Client, text: str, context_id: str = "ctx") -> str:
    """SendMessage with returnImmediately: the task id."""
    body = await call(
        client,
        "SendMessage",
        {"message": message(text, context_id), "configuration": {"returnImmediately": True}},
    )
    task_id: str = body["result"]["task"]["id"]
    return task_id


async def stream(client: Client, text: str, context_id: str = "ctx") -> list[dict[str, Any]]:
    """SendStreamingMessage: every event result, in order, until the stream ends."""
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": message(text, context_id)}),
    )
    return [data["result"] for _, data in await sse_events(response)]


async def get(client: Client, task_id: str) -> Task:
    body = await call(client, "GetTask", {"id": task_id})
    task: Task = body["result"]
    return task


async def cancel(client: Client, task_id: str) -> Task:
    body = await call(client, "CancelTask", {"id": task_id})
    assert "result" in body, body
    task: Task = body["result"]
    return task


async def wait_for_working(client: Client, task_id: str) -> None:
    """Follow the task's stream until it is WORKING (the agent has produced something)."""
    response = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
    )
    async for raw in response.content:
        if b"TASK_STATE_WORKING" in raw:
            response.close()
            return
    raise AssertionError(f"task {task_id} ended before it was WORKING")


def state(task: Task) -> str:
    value: str = task["status"]["state"]
    return value


def status_text(task: Task) -> str:
    parts = task["status"].get("message", {}).get("parts", [])
    return "".join(p.get("text", "") for p in parts)


def answer(task: Task) -> str:
    """The text of the task's response artifact."""
    (artifact,) = task["artifacts"]
    return "".join(p.get("text", "") for p in artifact["parts"])


def wrapper_metadata(task: Task) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return section


async def wait_done(client: Client, task_id: str) -> Task:
    """Follow the task's stream until it ends, then read the task."""
    response = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
    )
    if response.content_type == "text/event-stream":
        async for _ in response.content:
            pass
    response.close()
    return await get(client, task_id)
