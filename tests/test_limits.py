"""Daemon-wide limits (`server.max*`): each refusal is the protocol's error with a clear
message, and turns beyond the concurrency limits wait in order as SUBMITTED."""

from __future__ import annotations

import base64
from typing import Any

import anyio

from tests.conftest import Client, MakeClient, make_settings
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, call, user_message

TOKENS = {
    "auth": {
        "tokens": [
            {"token": "tok-a", "principal": "team-a"},
            {"token": "tok-b", "principal": "team-b"},
        ]
    }
}


async def start(
    client: Client, text: str, context: str, token: str | None = None
) -> dict[str, Any]:
    headers = {**V1, "Authorization": f"Bearer {token}"} if token else None
    body = await call(
        client,
        "SendMessage",
        {
            "message": user_message(text, contextId=context, messageId=f"{context}-{text}"),
            "configuration": {"returnImmediately": True},
        },
        headers=headers,
    )
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def state(client: Client, task_id: str, token: str | None = None) -> str:
    headers = {**V1, "Authorization": f"Bearer {token}"} if token else None
    body = await call(client, "GetTask", {"id": task_id}, headers=headers)
    result: str = body["result"]["status"]["state"]
    return result


async def test_too_many_parts_is_invalid_params(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"maxParts": 2}))
    message = user_message("a")
    message["parts"] = [{"text": "a"}, {"text": "b"}, {"text": "c"}]

    body = await call(client, "SendMessage", {"message": message})

    assert body["error"]["code"] == -32602
    assert "at most 2 parts (server.maxParts)" in body["error"]["message"]


async def test_a_file_part_over_the_limit_is_invalid_params(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"maxFileBytes": 1024}))
    message = user_message("a")
    message["parts"] = [
        {"text": "see file"},
        {"raw": base64.b64encode(b"x" * 2048).decode(), "mediaType": "text/plain"},
    ]

    body = await call(client, "SendMessage", {"message": message})

    assert body["error"]["code"] == -32602
    assert "message.parts[1].raw" in body["error"]["message"]
    assert "server.maxFileBytes" in body["error"]["message"]


async def test_turns_beyond_the_daemon_limit_wait_in_order(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(server={"maxConcurrentTurns": 1}))
    first = await start(client, "block", "c1")
    await backend.entered(first["id"]).wait()
    second = await start(client, "block", "c2")

    assert await state(client, second["id"]) == "TASK_STATE_SUBMITTED"
    assert [t.task_id for t in backend.turns] == [first["id"]]
    backend.release(first["id"])
    with anyio.fail_after(5):
        await backend.entered(second["id"]).wait()
    backend.release(second["id"])


async def test_a_principal_limit_does_not_hold_back_others(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(
        make_settings(server={**TOKENS, "maxConcurrentTurnsPerPrincipal": 1})
    )
    a1 = await start(client, "block", "a1", "tok-a")
    await backend.entered(a1["id"]).wait()
    a2 = await start(client, "block", "a2", "tok-a")
    b1 = await start(client, "block", "b1", "tok-b")

    with anyio.fail_after(5):
        await backend.entered(b1["id"]).wait()
    assert await state(client, a2["id"], "tok-a") == "TASK_STATE_SUBMITTED"
    backend.release(a1["id"])
    with anyio.fail_after(5):
        await backend.entered(a2["id"]).wait()
    backend.release(a2["id"])
    backend.release(b1["id"])


async def test_too_many_waiting_turns_are_refused(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(server={"maxConcurrentTurns": 1, "maxQueuedTurns": 1}))
    running = await start(client, "block", "c1")
    await backend.entered(running["id"]).wait()
    waiting = await start(client, "echo: later", "c2")

    refused = await call(
        client, "SendMessage", {"message": user_message("echo: no room", contextId="c3")}
    )
    backend.release(running["id"])

    assert refused["error"]["code"] == -32004
    assert "server.maxQueuedTurns = 1" in refused["error"]["message"]
    listed = await call(client, "ListTasks", {"contextId": "c3"})
    assert listed["result"]["tasks"] == []
    assert waiting["status"]["state"] == "TASK_STATE_SUBMITTED"


async def test_a_canceled_waiting_turn_frees_its_place(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(server={"maxConcurrentTurns": 1, "maxQueuedTurns": 1}))
    running = await start(client, "block", "c1")
    await backend.entered(running["id"]).wait()
    waiting = await start(client, "echo: later", "c2")

    canceled = await call(client, "CancelTask", {"id": waiting["id"]})
    again = await start(client, "echo: now there is room", "c3")
    backend.release(running["id"])

    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert again["status"]["state"] == "TASK_STATE_SUBMITTED"
