"""Golden tests of every v1.0 REST route (`/a2a/rest/...`, and the `/{tenant}` forms)."""

from __future__ import annotations

from typing import Any

import pytest
from aiohttp import ClientResponse

from tests.conftest import Client
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, Normalizer, sse_events, user_message

INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def status_body(code: int, status: str, message: str, reason: str) -> dict[str, Any]:
    details = [{"@type": INFO, "reason": reason, "domain": "a2a-protocol.org", "metadata": {}}]
    return {"error": {"code": code, "status": status, "message": message, "details": details}}


async def json_of(response: ClientResponse, status: int = 200) -> Any:
    assert response.status == status, await response.text()
    assert response.content_type == "application/json"
    return await response.json()


async def send(client: Client, text: str, prefix: str = "/a2a/rest", **config: Any) -> Any:
    body: dict[str, Any] = {"message": user_message(text)}
    if config:
        body["configuration"] = config
    response = await client.post(f"{prefix}/message:send", json=body, headers=V1)
    return await json_of(response)


@pytest.mark.parametrize("prefix", ["/a2a/rest", "/a2a/rest/acme"])
async def test_send_get_cancel(client: Client, prefix: str) -> None:
    sent = await send(client, "ask: which?", prefix)
    task = sent["task"]
    assert Normalizer()(task)["status"] == {
        "state": "TASK_STATE_INPUT_REQUIRED",
        "message": {
            "messageId": "<id3>",
            "contextId": "<id2>",
            "taskId": "<id1>",
            "role": "ROLE_AGENT",
            "parts": [{"text": "which?"}],
        },
        "timestamp": "<ts>",
    }
    got = await json_of(await client.get(f"{prefix}/tasks/{task['id']}", headers=V1))
    assert got == task
    short = await json_of(
        await client.get(f"{prefix}/tasks/{task['id']}?historyLength=0", headers=V1)
    )
    assert "history" not in short
    canceled = await json_of(await client.post(f"{prefix}/tasks/{task['id']}:cancel", headers=V1))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    again = await client.post(f"{prefix}/tasks/{task['id']}:cancel", headers=V1)
    assert await json_of(again, 409) == status_body(
        409,
        "FAILED_PRECONDITION",
        f"Task {task['id']} is in terminal state: TASK_STATE_CANCELED",
        "TASK_NOT_CANCELABLE",
    )


async def test_send_direct_message(client: Client) -> None:
    sent = await send(client, "reply: hey")
    assert Normalizer()(sent) == {
        "message": {
            "messageId": "<id1>",
            "contextId": "<id2>",
            "role": "ROLE_AGENT",
            "parts": [{"text": "hey"}],
        }
    }


async def test_list_tasks_query(client: Client) -> None:
    for n in range(3):
        body = {"message": user_message(f"echo: {n}", contextId="c", messageId=f"m{n}")}
        await client.post("/a2a/rest/message:send", json=body, headers=V1)
    page = await json_of(
        await client.get("/a2a/rest/tasks?contextId=c&pageSize=2&historyLength=0", headers=V1)
    )
    assert len(page["tasks"]) == 2
    assert page["totalSize"] == 3
    assert all("history" not in t and "artifacts" not in t for t in page["tasks"])
    token = page["nextPageToken"]
    rest = await json_of(
        await client.get(
            f"/a2a/rest/tasks?contextId=c&pageSize=2&pageToken={token}&includeArtifacts=true",
            headers=V1,
        )
    )
    assert rest["nextPageToken"] == ""
    assert rest["tasks"][0]["artifacts"][0]["parts"] == [{"text": "0"}]
    by_state = await json_of(
        await client.get("/a2a/rest/tasks?status=TASK_STATE_COMPLETED", headers=V1)
    )
    assert by_state["totalSize"] == 3


@pytest.mark.parametrize("verb", ["POST", "GET"])
async def test_stream_and_subscribe(client: Client, backend: ScriptedBackend, verb: str) -> None:
    response = await client.post(
        "/a2a/rest/message:stream", json={"message": user_message("echo: s")}, headers=V1
    )
    assert response.headers["Content-Type"] == "text/event-stream"
    events = [d for _, d in await sse_events(response)]
    assert [next(iter(e)) for e in events] == ["task", "artifactUpdate", "statusUpdate"]

    sent = await send(client, "block", returnImmediately=True)
    task_id = sent["task"]["id"]
    await backend.entered(task_id).wait()
    sub = await client.request(verb, f"/a2a/rest/tasks/{task_id}:subscribe", headers=V1)
    backend.release(task_id)
    events = [d for _, d in await sse_events(sub)]
    assert [next(iter(e)) for e in events] == ["task", "artifactUpdate", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_subscribe_terminal_is_400(client: Client) -> None:
    sent = await send(client, "echo: x")
    response = await client.post(f"/a2a/rest/tasks/{sent['task']['id']}:subscribe", headers=V1)
    body = await json_of(response, 400)
    assert body["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION"


async def test_message_to_terminal_task(client: Client) -> None:
    sent = await send(client, "echo: x")
    body = {"message": user_message("more", taskId=sent["task"]["id"], messageId="m2")}
    response = await client.post("/a2a/rest/message:send", json=body, headers=V1)
    error = await json_of(response, 400)
    assert error["error"]["status"] == "UNIMPLEMENTED"
    assert error["error"]["details"][0]["reason"] == "UNSUPPORTED_OPERATION"


@pytest.mark.parametrize(
    ("verb", "path"),
    [
        ("POST", "/tasks/t1/pushNotificationConfigs"),
        ("GET", "/tasks/t1/pushNotificationConfigs"),
        ("GET", "/tasks/t1/pushNotificationConfigs/c1"),
        ("DELETE", "/tasks/t1/pushNotificationConfigs/c1"),
    ],
)
async def test_push_routes(client: Client, verb: str, path: str) -> None:
    response = await client.request(verb, "/a2a/rest" + path, json={}, headers=V1)
    assert await json_of(response, 400) == status_body(
        400,
        "UNIMPLEMENTED",
        "Push Notification is not supported",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    )


async def test_extended_card(client: Client) -> None:
    response = await client.get("/a2a/rest/extendedAgentCard", headers=V1)
    body = await json_of(response, 400)
    assert body["error"]["details"][0]["reason"] == "EXTENDED_AGENT_CARD_NOT_CONFIGURED"


async def test_missing_version_header(client: Client) -> None:
    response = await client.get("/a2a/rest/tasks/x")
    body = await json_of(response, 400)
    assert body["error"]["status"] == "UNIMPLEMENTED"
    assert body["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
