"""Approvals over A2A (`approvals.*`), through the real HTTP app with the scripted backend,
whose `approve: <tool>` prompt asks permission the way a real agent's callback does."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from core.storage.memory import InMemoryTaskStore
from core.wire.enums import TaskState
from tests.conftest import Client, MakeClient, make_settings
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, call, rpc, sse_events, user_message

ASK = {"mode": "ask"}


async def send(client: Client, message: dict[str, Any], **configuration: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": message}
    if configuration:
        params["configuration"] = configuration
    body = await call(client, "SendMessage", params)
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def answer(task_id: str, text: str | None = None, data: Any = None) -> dict[str, Any]:
    message = user_message(text or "", taskId=task_id, messageId=f"answer-{text}-{data}")
    if data is not None:
        message["parts"] = [{"data": data}]
    return message


def parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = task["status"]["message"]["parts"]
    return found


async def test_ask_mode_pauses_at_input_required_with_the_request(make_client: MakeClient) -> None:
    client = await make_client(make_settings(approvals=ASK))

    task = await send(client, user_message("approve: rm -rf build"))

    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    text, data = parts(task)
    assert "Run `rm -rf build` in the working directory" in text["text"]
    assert data["data"] == {
        "type": "a2a-wrapper/approval-request",
        "requestId": "req-rm -rf build",
        "kind": "command",
        "tool": "rm -rf build",
        "summary": "Run `rm -rf build` in the working directory",
        "detail": {"command": "rm -rf build"},
        "options": ["approve", "approve_always", "deny"],
    }


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ({"text": "approve"}, "ran make"),
        ({"text": "Approve Always"}, "ran make"),
        ({"data": {"decision": "approve_always"}}, "ran make"),
        ({"text": "deny"}, "denied: no reason given"),
        ({"data": {"decision": "deny", "message": "not on Fridays"}}, "denied: not on Fridays"),
    ],
)
async def test_the_answer_continues_the_same_turn(
    make_client: MakeClient, backend: ScriptedBackend, reply: dict[str, Any], expected: str
) -> None:
    client = await make_client(make_settings(approvals=ASK))
    asked = await send(client, user_message("approve: make"))

    done = await send(client, answer(asked["id"], reply.get("text"), reply.get("data")))

    assert done["id"] == asked["id"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert parts(done)[0]["text"] == expected
    assert len(backend.turns) == 1  # no new turn: the paused one went on
    decisions = done["metadata"]["a2aWrapper"]["approvals"]
    assert decisions[0]["by"] == "caller"
    assert decisions[0]["tool"] == "make"


async def test_something_that_is_not_a_decision_is_invalid_params(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(approvals=ASK))
    asked = await send(client, user_message("approve: make"))

    body = await call(client, "SendMessage", {"message": answer(asked["id"], "maybe later")})
    still = await call(client, "GetTask", {"id": asked["id"]})

    assert body["error"]["code"] == -32602
    assert "approve, approve always or deny" in body["error"]["message"]
    assert still["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_streaming_closes_at_the_question_and_the_answer_opens_a_new_stream(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(approvals=ASK))
    first = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("approve: make")}),
    )
    first_events = [d["result"] for _, d in await sse_events(first)]
    task_id = first_events[0]["task"]["id"]

    second = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": answer(task_id, "approve")}),
    )
    second_events = [d["result"] for _, d in await sse_events(second)]

    last = first_events[-1]["statusUpdate"]["status"]
    assert last["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert second_events[0]["task"]["status"]["state"] == "TASK_STATE_WORKING"
    assert second_events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert "Running `make`" in str(second_events)


async def test_an_unanswered_question_is_denied_after_the_timeout(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(approvals={**ASK, "timeout": 100}))
    asked = await send(client, user_message("approve: make"), returnImmediately=True)

    with anyio.fail_after(5):
        while True:  # the blocking GetTask-free way: subscribe until the task ends
            response = await client.post(
                "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": asked["id"]})
            )
            if response.content_type == "application/json":
                break
            await sse_events(response)
    done = (await call(client, "GetTask", {"id": asked["id"]}))["result"]

    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    assert parts(done)[0]["text"] == "denied: No answer came within approvals.timeout."
    assert done["metadata"]["a2aWrapper"]["approvals"][0]["by"] == "timeout"


async def test_on_timeout_fail_fails_the_task_with_the_reason(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(
        make_settings(approvals={**ASK, "timeout": 100, "onTimeout": "fail"})
    )

    task = await send(client, user_message("approve: make"))
    while task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED":
        response = await client.post(
            "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task["id"]})
        )
        if response.content_type == "text/event-stream":
            await sse_events(response)
        task = (await call(client, "GetTask", {"id": task["id"]}))["result"]

    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "approvals.timeout" in parts(task)[0]["text"]
    assert backend.interrupted == [task["id"]]
    # An agent's permission callback still waiting on the question is let go.
    (question,) = backend.questions
    assert question.reply.answered


async def test_cancel_while_waiting_stops_the_turn(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(approvals=ASK))
    asked = await send(client, user_message("approve: make"))

    canceled = await call(client, "CancelTask", {"id": asked["id"]})

    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert backend.interrupted == [asked["id"]]


async def test_policy_mode_never_asks(make_client: MakeClient, backend: ScriptedBackend) -> None:
    client = await make_client()

    task = await send(client, user_message("approve: make"))

    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert parts(task)[0]["text"] == "ran make"
    assert backend.turns[0].approvals == "policy"


async def test_shutdown_does_not_wait_for_an_unanswered_question(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    store = InMemoryTaskStore()
    client = await make_client(
        make_settings(approvals=ASK, server={"shutdownTimeout": 60_000}), store=store
    )
    asked = await send(client, user_message("approve: make"))

    with anyio.fail_after(10):  # far below server.shutdownTimeout
        await client.close()

    task = await store.get("anonymous", asked["id"])
    assert task is not None
    assert task.status.state == TaskState.FAILED
    assert backend.interrupted == [asked["id"]]
