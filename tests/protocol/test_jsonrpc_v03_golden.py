"""Golden tests of the v0.3 JSON-RPC dialect on the shared endpoint (no A2A-Version header)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Client
from tests.support.scripted import ScriptedBackend
from tests.support.wire import SCRIPTED_METADATA, Normalizer, call, rpc, sse_events

V03: dict[str, str] = {}


def v03_message(text: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "message",
        "messageId": extra.pop("messageId", "o-1"),
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
        **extra,
    }


async def v03_call(client: Client, method: str, params: Any = None) -> dict[str, Any]:
    return await call(client, method, params, headers=V03, request_id="a")


async def test_message_send_returns_bare_task(client: Client) -> None:
    body = await v03_call(client, "message/send", {"message": v03_message("echo: hi")})
    assert Normalizer(keep={"a"})(body) == {
        "jsonrpc": "2.0",
        "id": "a",
        "result": {
            "kind": "task",
            "id": "<id1>",
            "contextId": "<id2>",
            "status": {
                "state": "completed",
                "message": {
                    "kind": "message",
                    "messageId": "<id3>",
                    "role": "agent",
                    "parts": [{"kind": "text", "text": "hi"}],
                    "contextId": "<id2>",
                    "taskId": "<id1>",
                },
                "timestamp": "<ts>",
            },
            "artifacts": [
                {
                    "artifactId": "<id4>",
                    "parts": [{"kind": "text", "text": "hi"}],
                    "name": "response",
                }
            ],
            "history": [
                {
                    "kind": "message",
                    "messageId": "<id5>",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "echo: hi"}],
                    "contextId": "<id2>",
                    "taskId": "<id1>",
                }
            ],
            "metadata": SCRIPTED_METADATA,
        },
    }


async def test_message_send_direct_reply(client: Client) -> None:
    body = await v03_call(client, "message/send", {"message": v03_message("reply: yo")})
    assert Normalizer()(body["result"]) == {
        "kind": "message",
        "messageId": "<id1>",
        "role": "agent",
        "parts": [{"kind": "text", "text": "yo"}],
        "contextId": "<id2>",
    }


async def test_message_send_non_blocking_and_parts_without_kind(
    client: Client, backend: ScriptedBackend
) -> None:
    message = {"messageId": "o-2", "role": "user", "parts": [{"text": "block"}]}
    body = await v03_call(
        client, "message/send", {"message": message, "configuration": {"blocking": False}}
    )
    task = body["result"]
    assert task["status"]["state"] == "submitted"
    backend.release(task["id"])


async def test_file_and_data_parts_round_trip(client: Client) -> None:
    message = v03_message("x")
    message["parts"] = [
        {"kind": "text", "text": "ask: ok?"},
        {"kind": "file", "file": {"bytes": "aGk=", "name": "a.txt", "mimeType": "text/plain"}},
        {"kind": "file", "file": {"uri": "https://x.example/f"}},
        {"kind": "data", "data": {"k": 1}},
    ]
    body = await v03_call(client, "message/send", {"message": message})
    assert body["result"]["history"][0]["parts"] == message["parts"]


async def test_tasks_get_and_history_length(client: Client) -> None:
    sent = await v03_call(client, "message/send", {"message": v03_message("ask: q")})
    task_id = sent["result"]["id"]
    follow = v03_message("echo: a", messageId="o-2", taskId=task_id)
    await v03_call(client, "message/send", {"message": follow})
    body = await v03_call(client, "tasks/get", {"id": task_id, "historyLength": 2})
    assert [m["role"] for m in body["result"]["history"]] == ["agent", "user"]
    assert body["result"]["kind"] == "task"


async def test_tasks_get_unknown(client: Client) -> None:
    body = await v03_call(client, "tasks/get", {"id": "nope"})
    assert body == {
        "jsonrpc": "2.0",
        "id": "a",
        "error": {"code": -32001, "message": "Task not found"},
    }


async def test_tasks_cancel(client: Client) -> None:
    sent = await v03_call(client, "message/send", {"message": v03_message("ask: q")})
    task_id = sent["result"]["id"]
    body = await v03_call(client, "tasks/cancel", {"id": task_id})
    assert body["result"]["status"]["state"] == "canceled"
    again = await v03_call(client, "tasks/cancel", {"id": task_id})
    assert again["error"] == {
        "code": -32002,
        "message": f"Task {task_id} is in terminal state: TASK_STATE_CANCELED",
    }


async def test_message_to_terminal_task(client: Client) -> None:
    sent = await v03_call(client, "message/send", {"message": v03_message("echo: x")})
    follow = v03_message("again", messageId="o-2", taskId=sent["result"]["id"])
    body = await v03_call(client, "message/send", {"message": follow})
    assert body["error"]["code"] == -32004
    assert "data" not in body["error"]


async def test_message_stream_final_on_input_required(client: Client) -> None:
    response = await client.post(
        "/a2a/jsonrpc",
        json=rpc("message/stream", {"message": v03_message("ask: more?")}, request_id="e"),
    )
    assert response.headers["Content-Type"] == "text/event-stream"
    events = [data for _, data in await sse_events(response)]
    results = Normalizer()([e["result"] for e in events])
    assert all(e["id"] == "e" and e["jsonrpc"] == "2.0" for e in events)
    assert [r["kind"] for r in results] == ["task", "status-update"]
    assert results[0]["status"] == {"state": "submitted", "timestamp": "<ts>"}
    assert results[1]["final"] is True
    assert results[1]["status"]["state"] == "input-required"


async def test_message_stream_completed(client: Client) -> None:
    response = await client.post(
        "/a2a/jsonrpc", json=rpc("message/stream", {"message": v03_message("deltas: a|b")})
    )
    results = [d["result"] for _, d in await sse_events(response)]
    assert [r["kind"] for r in results] == [
        "task",
        "status-update",
        "artifact-update",
        "status-update",
    ]
    assert [r.get("final") for r in results] == [None, False, None, True]
    assert results[2]["artifact"]["parts"] == [{"kind": "text", "text": "ab"}]
    assert results[2]["lastChunk"] is True


async def test_stream_errors_arrive_inside_the_stream(client: Client) -> None:
    response = await client.post(
        "/a2a/jsonrpc",
        json=rpc("message/stream", {"message": v03_message("x", taskId="missing")}, request_id=3),
    )
    assert response.headers["Content-Type"] == "text/event-stream"
    assert await sse_events(response) == [
        (None, {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "Task not found"}})
    ]


async def test_resubscribe(client: Client, backend: ScriptedBackend) -> None:
    sent = await v03_call(
        client,
        "message/send",
        {"message": v03_message("block"), "configuration": {"blocking": False}},
    )
    task_id = sent["result"]["id"]
    await backend.entered(task_id).wait()
    response = await client.post("/a2a/jsonrpc", json=rpc("tasks/resubscribe", {"id": task_id}))
    backend.release(task_id)
    results = [d["result"] for _, d in await sse_events(response)]
    assert [r["kind"] for r in results] == ["task", "artifact-update", "status-update"]
    assert results[-1]["final"] is True
    assert results[-1]["status"]["state"] == "completed"


async def test_resubscribe_terminal_task_errors_in_stream(client: Client) -> None:
    sent = await v03_call(client, "message/send", {"message": v03_message("echo: x")})
    response = await client.post(
        "/a2a/jsonrpc", json=rpc("tasks/resubscribe", {"id": sent["result"]["id"]})
    )
    [(_, event)] = await sse_events(response)
    assert event["error"]["code"] == -32004


@pytest.mark.parametrize(
    "method",
    [
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
    ],
)
async def test_push_config_methods(client: Client, method: str) -> None:
    body = await v03_call(client, method, {"id": "t"})
    assert body["error"] == {"code": -32003, "message": "Push Notification is not supported"}


async def test_authenticated_extended_card(client: Client) -> None:
    body = await v03_call(client, "agent/getAuthenticatedExtendedCard")
    assert body["error"]["code"] == -32007


async def test_v1_only_method_names_are_unknown_in_v03_form(client: Client) -> None:
    body = await v03_call(client, "tasks/list", {})
    assert body["error"]["code"] == -32601


async def test_v03_method_with_v1_header(client: Client) -> None:
    body = await call(client, "tasks/get", {"id": "x"}, headers={"A2A-Version": "1.0"})
    assert body["error"]["code"] == -32603
    assert "not supported" in body["error"]["message"]


@pytest.mark.parametrize(
    "part",
    [
        {"kind": "image", "image": "x"},
        {"kind": "file"},
        {"bogus": True},
        {"type": "unsupported_type", "text": "x"},
    ],
)
async def test_unknown_or_broken_part_kind(client: Client, part: dict[str, Any]) -> None:
    message = v03_message("x")
    message["parts"] = [part]
    body = await v03_call(client, "message/send", {"message": message})
    assert body["error"]["code"] == -32602


async def test_empty_parts_and_negative_history(client: Client) -> None:
    message = v03_message("x")
    message["parts"] = []
    body = await v03_call(client, "message/send", {"message": message})
    assert body["error"]["code"] == -32602
    body = await v03_call(client, "tasks/get", {"id": "t", "historyLength": -1})
    assert body["error"]["code"] == -32602


async def test_same_task_visible_in_both_versions(client: Client) -> None:
    sent = await v03_call(client, "message/send", {"message": v03_message("echo: shared")})
    task_id = sent["result"]["id"]
    response = await client.get(f"/a2a/rest/tasks/{task_id}", headers={"A2A-Version": "1.0"})
    assert response.status == 200
    task = await response.json()
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["history"][0]["parts"] == [{"text": "echo: shared"}]
