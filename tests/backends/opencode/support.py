"""Helpers for the OpenCode e2e tests (A2A calls on the daemon under test)."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.wire import call, user_message

Client = TestClient[Any, Any]


async def send(
    client: Client, text: str, *, context_id: str | None = None, message_id: str = "m-1"
) -> dict[str, Any]:
    """SendMessage (blocking, v1 JSON-RPC); returns the task."""
    message = user_message(text, messageId=message_id)
    if context_id is not None:
        message["contextId"] = context_id
    body = await call(client, "SendMessage", {"message": message})
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def answer(task: dict[str, Any]) -> str:
    """The text of the task's response artifact."""
    texts = [p.get("text", "") for a in task.get("artifacts") or [] for p in a["parts"]]
    return "".join(texts)


def wrapper_metadata(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = (task.get("metadata") or {}).get("a2aWrapper") or {}
    return section


def status_text(task: dict[str, Any]) -> str:
    """The text of the task's status message."""
    message = task["status"].get("message") or {}
    return "".join(p.get("text", "") for p in message.get("parts") or [])
