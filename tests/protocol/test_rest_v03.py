"""Golden tests of every v0.3 REST route (`/a2a/rest/v1/...`, v0.3 ProtoJSON)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Client
from tests.protocol.test_rest_v1 import json_of
from tests.support.scripted import ScriptedBackend
from tests.support.wire import SCRIPTED_METADATA, Normalizer, sse_events

BASE = "/a2a/rest/v1"


def proto_message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "messageId": extra.pop("messageId", "q1"),
        "role": "ROLE_USER",
        "content": [{"text": text}],
        **extra,
    }


async def send(client: Client, body: dict[str, Any]) -> Any:
    return await json_of(await client.post(f"{BASE}/message:send", json=body))


async def test_send_proto_shape(client: Client) -> None:
    sent = await send(client, {"message": proto_message("echo: hi")})
    assert Normalizer()(sent) == {
        "task": {
            "id": "<id1>",
            "contextId": "<id2>",
            "status": {
                "state": "TASK_STATE_COMPLETED",
                "message": {
                    "messageId": "<id3>",
                    "contextId": "<id2>",
                    "taskId": "<id1>",
                    "role": "ROLE_AGENT",
                    "content": [{"text": "hi"}],
                },
                "timestamp": "<ts>",
            },
            "artifacts": [{"artifactId": "<id4>", "name": "response", "parts": [{"text": "hi"}]}],
            "history": [
                {
                    "messageId": "<id5>",
                    "contextId": "<id2>",
                    "taskId": "<id1>",
                    "role": "ROLE_USER",
                    "content": [{"text": "echo: hi"}],
                }
            ],
            "metadata": SCRIPTED_METADATA,
        }
    }


@pytest.mark.parametrize(
    "body",
    [
        {"request": {"message_id": "q", "role": "ROLE_USER", "content": [{"text": "echo: a"}]}},
        {
            "message": {
                "kind": "message",
                "messageId": "q",
                "role": "user",
                "parts": [{"kind": "text", "text": "echo: a"}],
            }
        },
    ],
    ids=["snake-case-proto", "json-rpc-shape"],
)
async def test_lenient_inputs(client: Client, body: dict[str, Any]) -> None:
    sent = await send(client, body)
    assert sent["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert sent["task"]["history"][0]["content"] == [{"text": "echo: a"}]


async def test_file_and_data_parts(client: Client) -> None:
    content = [
        {"text": "ask: ok?"},
        {"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        {"file": {"fileWithUri": "https://x.example/f"}},
        {"data": {"data": {"k": 1}}},
    ]
    sent = await send(client, {"message": {**proto_message("x"), "content": content}})
    assert sent["task"]["history"][0]["content"] == content


async def test_configuration_without_blocking_is_non_blocking(
    client: Client, backend: ScriptedBackend
) -> None:
    sent = await send(client, {"message": proto_message("block"), "configuration": {}})
    assert sent["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    backend.release(sent["task"]["id"])


async def test_get_list_cancel_with_cancelled_spelling(client: Client) -> None:
    sent = await send(client, {"message": proto_message("ask: q")})
    task_id = sent["task"]["id"]
    got = await json_of(await client.get(f"{BASE}/tasks/{task_id}?historyLength=0"))
    assert len(got["history"]) == 1  # 0 means "no limit" in v0.3 REST
    listed = await json_of(await client.get(f"{BASE}/tasks"))
    assert [t["id"] for t in listed] == [task_id]
    canceled = await json_of(await client.post(f"{BASE}/tasks/{task_id}:cancel"))
    assert canceled["status"]["state"] == "TASK_STATE_CANCELLED"


async def test_stream_and_subscribe(client: Client, backend: ScriptedBackend) -> None:
    response = await client.post(
        f"{BASE}/message:stream", json={"message": proto_message("ask: q")}
    )
    events = [d for _, d in await sse_events(response)]
    assert [next(iter(e)) for e in events] == ["task", "statusUpdate"]
    assert events[-1]["statusUpdate"]["final"] is True

    sent = await send(client, {"message": proto_message("block"), "configuration": {}})
    task_id = sent["task"]["id"]
    await backend.entered(task_id).wait()
    sub = await client.get(f"{BASE}/tasks/{task_id}:subscribe")
    backend.release(task_id)
    events = [d for _, d in await sse_events(sub)]
    assert [next(iter(e)) for e in events] == ["task", "artifactUpdate", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_errors_carry_status_and_type(client: Client) -> None:
    response = await client.get(f"{BASE}/tasks/nope")
    body = await json_of(response, 404)
    assert body["type"] == "TaskNotFoundError"
    assert body["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"


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
    body = await json_of(await client.request(verb, BASE + path, json={}), 400)
    assert body["type"] == "PushNotificationNotSupportedError"


async def test_card(client: Client) -> None:
    card = await json_of(await client.get(f"{BASE}/card"))
    assert card["protocolVersion"] == "0.3.0"
    assert card["url"].endswith("/a2a/jsonrpc")


async def test_v1_header_on_v03_route(client: Client) -> None:
    response = await client.get(f"{BASE}/tasks/x", headers={"A2A-Version": "1.0"})
    body = await json_of(response, 400)
    assert body["error"]["details"][0]["reason"] == "VERSION_NOT_SUPPORTED"
