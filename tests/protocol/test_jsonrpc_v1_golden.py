"""Golden tests of the raw v1.0 JSON-RPC wire: request in, exact JSON out.

Generated ids and timestamps are normalised; everything else is compared exactly.
"""

from __future__ import annotations

import json
from typing import Any

from tests.conftest import Client
from tests.support.scripted import ScriptedBackend
from tests.support.wire import (
    SCRIPTED_METADATA,
    V1,
    Normalizer,
    call,
    rpc,
    sse_events,
    user_message,
)

ERROR_INFO = "type.googleapis.com/google.rpc.ErrorInfo"


def info(reason: str, **metadata: str) -> list[dict[str, Any]]:
    return [
        {"@type": ERROR_INFO, "reason": reason, "domain": "a2a-protocol.org", "metadata": metadata}
    ]


async def test_send_message_blocking_returns_completed_task(client: Client) -> None:
    body = await call(client, "SendMessage", {"message": user_message("echo: hello")})
    assert Normalizer()(body) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
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
                        "parts": [{"text": "hello"}],
                    },
                    "timestamp": "<ts>",
                },
                "artifacts": [
                    {"artifactId": "<id4>", "name": "response", "parts": [{"text": "hello"}]}
                ],
                "history": [
                    {
                        "messageId": "<id5>",
                        "contextId": "<id2>",
                        "taskId": "<id1>",
                        "role": "ROLE_USER",
                        "parts": [{"text": "echo: hello"}],
                    }
                ],
                "metadata": SCRIPTED_METADATA,
            }
        },
    }


async def test_send_message_direct_reply_is_a_message(client: Client) -> None:
    body = await call(
        client, "SendMessage", {"message": user_message("reply: hi", contextId="ctx-1")}
    )
    assert Normalizer(keep={"ctx-1"})(body) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {
            "message": {
                "messageId": "<id1>",
                "contextId": "ctx-1",
                "role": "ROLE_AGENT",
                "parts": [{"text": "hi"}],
            }
        },
    }


async def test_send_message_return_immediately(client: Client, backend: ScriptedBackend) -> None:
    body = await call(
        client,
        "SendMessage",
        {"message": user_message("block"), "configuration": {"returnImmediately": True}},
    )
    task = body["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    backend.release(task["id"])


async def test_get_task_with_history_length(client: Client) -> None:
    sent = await call(client, "SendMessage", {"message": user_message("ask: which file?")})
    task = sent["result"]["task"]
    await call(
        client,
        "SendMessage",
        {"message": user_message("echo: main.py", messageId="m-2", taskId=task["id"])},
    )
    full = await call(client, "GetTask", {"id": task["id"]})
    assert [m["role"] for m in full["result"]["history"]] == [
        "ROLE_USER",
        "ROLE_AGENT",
        "ROLE_USER",
    ]
    one = await call(client, "GetTask", {"id": task["id"], "historyLength": 1})
    assert [m["messageId"] for m in one["result"]["history"]] == ["m-2"]
    none = await call(client, "GetTask", {"id": task["id"], "historyLength": 0})
    assert "history" not in none["result"]


async def test_get_unknown_task(client: Client) -> None:
    body = await call(client, "GetTask", {"id": "nope"})
    assert body == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {"code": -32001, "message": "Task not found", "data": info("TASK_NOT_FOUND")},
    }


async def test_list_tasks_pages_newest_first_without_artifacts(client: Client) -> None:
    ids = []
    for n in range(3):
        sent = await call(
            client,
            "SendMessage",
            {"message": user_message(f"echo: {n}", messageId=f"m-{n}", contextId="ctx")},
        )
        ids.append(sent["result"]["task"]["id"])
    await call(client, "SendMessage", {"message": user_message("echo: other", contextId="ctx-2")})
    first = await call(client, "ListTasks", {"contextId": "ctx", "pageSize": 2})
    result = first["result"]
    assert [t["id"] for t in result["tasks"]] == [ids[2], ids[1]]
    assert result["pageSize"] == 2
    assert result["totalSize"] == 3
    assert all("artifacts" not in t for t in result["tasks"])
    second = await call(
        client,
        "ListTasks",
        {
            "contextId": "ctx",
            "pageSize": 2,
            "pageToken": result["nextPageToken"],
            "includeArtifacts": True,
        },
    )
    assert [t["id"] for t in second["result"]["tasks"]] == [ids[0]]
    assert second["result"]["nextPageToken"] == ""
    assert second["result"]["tasks"][0]["artifacts"][0]["parts"] == [{"text": "0"}]


async def test_list_tasks_filters_by_status(client: Client) -> None:
    await call(client, "SendMessage", {"message": user_message("ask: q", contextId="s")})
    await call(client, "SendMessage", {"message": user_message("echo: e", contextId="s")})
    body = await call(client, "ListTasks", {"status": "TASK_STATE_INPUT_REQUIRED"})
    assert [t["status"]["state"] for t in body["result"]["tasks"]] == ["TASK_STATE_INPUT_REQUIRED"]


async def test_cancel_input_required_task(client: Client) -> None:
    sent = await call(client, "SendMessage", {"message": user_message("ask: q")})
    task_id = sent["result"]["task"]["id"]
    body = await call(client, "CancelTask", {"id": task_id})
    assert body["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    again = await call(client, "CancelTask", {"id": task_id})
    assert again["error"] == {
        "code": -32002,
        "message": (f"Task {task_id} is in terminal state: TASK_STATE_CANCELED"),
        "data": info("TASK_NOT_CANCELABLE"),
    }


async def test_cancel_running_task_interrupts_backend(
    client: Client, backend: ScriptedBackend
) -> None:
    sent = await call(
        client,
        "SendMessage",
        {"message": user_message("block"), "configuration": {"returnImmediately": True}},
    )
    task_id = sent["result"]["task"]["id"]
    await backend.entered(task_id).wait()
    body = await call(client, "CancelTask", {"id": task_id})
    assert body["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert backend.interrupted == [task_id]


async def test_message_to_terminal_task(client: Client) -> None:
    sent = await call(client, "SendMessage", {"message": user_message("echo: done")})
    task_id = sent["result"]["task"]["id"]
    body = await call(
        client, "SendMessage", {"message": user_message("again", messageId="m-2", taskId=task_id)}
    )
    assert body["error"] == {
        "code": -32004,
        "message": f"Task {task_id} is in terminal state: TASK_STATE_COMPLETED",
        "data": info("UNSUPPORTED_OPERATION"),
    }


async def test_context_mismatch_is_invalid_params(client: Client) -> None:
    sent = await call(client, "SendMessage", {"message": user_message("ask: q")})
    task = sent["result"]["task"]
    body = await call(
        client,
        "SendMessage",
        {"message": user_message("x", messageId="m-2", taskId=task["id"], contextId="other")},
    )
    assert body["error"]["code"] == -32602
    assert body["error"]["data"][0]["reason"] == "INVALID_PARAMS"


async def test_continuation_infers_context(client: Client) -> None:
    sent = await call(client, "SendMessage", {"message": user_message("ask: q")})
    task = sent["result"]["task"]
    body = await call(
        client,
        "SendMessage",
        {"message": user_message("echo: fine", messageId="m-2", taskId=task["id"])},
    )
    result = body["result"]["task"]
    assert result["id"] == task["id"]
    assert result["contextId"] == task["contextId"]
    assert result["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_streaming_message_sse_framing(client: Client) -> None:
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc(
            "SendStreamingMessage", {"message": user_message("echo: streamed")}, request_id="s1"
        ),
    )
    assert response.status == 200
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["Cache-Control"] == "no-store"
    raw = (await response.read()).decode()
    assert raw.startswith("data: {")
    assert raw.endswith("}\r\n\r\n")
    events = [data for _, data in _split(raw)]
    normal = Normalizer()([e["result"] for e in events])
    assert all(e["jsonrpc"] == "2.0" and e["id"] == "s1" for e in events)
    assert [next(iter(r)) for r in normal] == ["task", "artifactUpdate", "statusUpdate"]
    assert normal[0]["task"]["status"] == {"state": "TASK_STATE_SUBMITTED", "timestamp": "<ts>"}
    assert normal[1] == {
        "artifactUpdate": {
            "taskId": "<id1>",
            "contextId": "<id2>",
            "lastChunk": True,
            "artifact": {
                "artifactId": "<id5>",
                "name": "response",
                "parts": [{"text": "streamed"}],
            },
        }
    }
    assert normal[2]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


def _split(raw: str) -> list[tuple[str | None, dict[str, Any]]]:
    out: list[tuple[str | None, dict[str, Any]]] = []
    for block in raw.split("\r\n\r\n"):
        if block.startswith("data: "):
            out.append((None, json.loads(block[len("data: ") :])))
    return out


async def test_streaming_ends_at_input_required(client: Client) -> None:
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("ask: more?")}),
    )
    events = [d["result"] for _, d in await sse_events(response)]
    assert [next(iter(e)) for e in events] == ["task", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert events[-1]["statusUpdate"]["status"]["message"]["parts"] == [{"text": "more?"}]


async def test_streaming_error_before_first_event_is_plain_json(client: Client) -> None:
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("x", taskId="missing")}),
    )
    assert response.content_type == "application/json"
    body = await response.json()
    assert body["error"]["code"] == -32001


async def test_subscribe_two_subscribers_get_same_events(
    client: Client, backend: ScriptedBackend
) -> None:
    sent = await call(
        client,
        "SendMessage",
        {"message": user_message("block"), "configuration": {"returnImmediately": True}},
    )
    task_id = sent["result"]["task"]["id"]
    await backend.entered(task_id).wait()
    first = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
    )
    second = await client.post(
        "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
    )
    backend.release(task_id)
    a = [d["result"] for _, d in await sse_events(first)]
    b = [d["result"] for _, d in await sse_events(second)]
    assert [next(iter(e)) for e in a] == ["task", "artifactUpdate", "statusUpdate"]
    assert a[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert a[1:] == b[1:]
    assert a[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_subscribe_to_terminal_task(client: Client) -> None:
    sent = await call(client, "SendMessage", {"message": user_message("echo: x")})
    body = await call(client, "SubscribeToTask", {"id": sent["result"]["task"]["id"]})
    assert body["error"]["code"] == -32004


async def test_push_config_methods_not_supported(client: Client) -> None:
    for method, params in [
        ("CreateTaskPushNotificationConfig", {"taskId": "t", "url": "https://x.example/h"}),
        ("GetTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "t"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
    ]:
        body = await call(client, method, params)
        assert body == {
            "jsonrpc": "2.0",
            "id": 1,
            "error": {
                "code": -32003,
                "message": "Push Notification is not supported",
                "data": info("PUSH_NOTIFICATION_NOT_SUPPORTED"),
            },
        }


async def test_extended_card_not_configured(client: Client) -> None:
    body = await call(client, "GetExtendedAgentCard")
    assert body == {
        "jsonrpc": "2.0",
        "id": 1,
        "error": {
            "code": -32007,
            "message": "Extended agent card is not configured",
            "data": info("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
        },
    }


async def test_failed_and_rejected_turns(client: Client) -> None:
    failed = await call(client, "SendMessage", {"message": user_message("fail: disk full")})
    status = failed["result"]["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert status["message"]["parts"] == [{"text": "disk full"}]
    rejected = await call(client, "SendMessage", {"message": user_message("reject: no")})
    assert rejected["result"]["task"]["status"]["state"] == "TASK_STATE_REJECTED"


async def test_backend_crash_fails_task_with_error_id(client: Client) -> None:
    body = await call(client, "SendMessage", {"message": user_message("crash")})
    status = body["result"]["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert "error id" in status["message"]["parts"][0]["text"]
    assert "exploded" not in status["message"]["parts"][0]["text"]  # no internals leak


async def test_version_header_required_for_v1_methods(client: Client) -> None:
    body = await call(client, "GetTask", {"id": "x"}, headers={})
    assert body["error"]["code"] == -32009
    assert body["error"]["data"][0]["reason"] == "VERSION_NOT_SUPPORTED"
    body = await call(client, "GetTask", {"id": "x"}, headers={"A2A-Version": "99.0"})
    assert body["error"]["code"] == -32009
    body = await call(client, "GetTask", {"id": "x"}, headers={"a2a-version": "1.0.0"})
    assert body["error"]["code"] == -32001


async def test_alias_endpoints(client: Client) -> None:
    for path in ("/a2a/jsonrpc/", "/"):
        body = await call(client, "GetTask", {"id": "x"}, path=path)
        assert body["error"]["code"] == -32001
