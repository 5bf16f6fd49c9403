"""Read a daemon's tasks over raw v1.0 JSON-RPC (independent of the crew's own client)."""

from __future__ import annotations

from typing import Any

import httpx


async def rpc(url: str, method: str, params: dict[str, Any]) -> Any:
    async with httpx.AsyncClient(timeout=10, headers={"A2A-Version": "1.0"}) as http:
        envelope = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        response = await http.post(f"{url}/a2a/jsonrpc", json=envelope)
    body = response.json()
    if "error" in body:
        raise AssertionError(f"{method}: {body['error']}")
    return body["result"]


async def task(url: str, task_id: str) -> dict[str, Any]:
    result: dict[str, Any] = await rpc(url, "GetTask", {"id": task_id})
    return result


async def tasks(url: str, context_id: str | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"pageSize": 100}
    if context_id is not None:
        params["contextId"] = context_id
    result = await rpc(url, "ListTasks", params)
    found: list[dict[str, Any]] = result["tasks"]
    return found


async def send(url: str, text: str, *, message_id: str, context_id: str) -> dict[str, Any]:
    """SendMessage, returning at once (the task)."""
    message = {
        "messageId": message_id,
        "contextId": context_id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    result = await rpc(
        url, "SendMessage", {"message": message, "configuration": {"returnImmediately": True}}
    )
    sent: dict[str, Any] = result["task"]
    return sent
