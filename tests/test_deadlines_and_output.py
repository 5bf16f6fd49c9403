"""Daemon-enforced deadlines (`timeouts.*`) and the output modes (`output.*`), the same for
every backend; driven through the real HTTP app with the scripted backend."""

from __future__ import annotations

from typing import Any

from core.bindings.http.keys import SERVICE
from tests.conftest import Client, MakeClient, make_settings
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, call, rpc, sse_events, user_message


async def send(client: Client, text: str, context_id: str = "ctx") -> dict[str, Any]:
    message = user_message(text, contextId=context_id, messageId=text)
    body = await call(client, "SendMessage", {"message": message})
    task: dict[str, Any] = body["result"]["task"]
    return task


async def stream(client: Client, text: str) -> list[dict[str, Any]]:
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message(text)}),
    )
    return [data["result"] for _, data in await sse_events(response)]


def status_text(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


async def test_idle_timeout_stops_the_agent_and_fails_the_task(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(timeouts={"idle": 200, "turn": 60_000}))

    task = await send(client, "stall")

    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "timeouts.idle (0.2 s)" in status_text(task)
    assert backend.interrupted == [task["id"]]


async def test_turn_timeout_stops_the_agent_and_fails_the_task(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(timeouts={"idle": 0, "turn": 300}))

    task = await send(client, "block")

    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert "timeouts.turn (0.3 s)" in status_text(task)
    assert backend.interrupted == [task["id"]]
    assert backend.turns[0].deadline is not None


async def test_a_timed_out_context_takes_the_next_turn_in_the_same_session(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(timeouts={"idle": 200}))
    stalled = await send(client, "stall")

    after = await send(client, "history: after")

    assert after["status"]["state"] == "TASK_STATE_COMPLETED"
    assert status_text(after) == "stall"
    assert (
        after["metadata"]["a2aWrapper"]["sessionId"]
        == stalled["metadata"]["a2aWrapper"]["sessionId"]
    )


async def test_stream_mode_sends_each_delta_once_as_an_artifact_chunk(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(output={"mode": "stream"}))

    events = await stream(client, "deltas: Hel|lo, |world")

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [
        [{"text": "Hel"}],
        [{"text": "lo, "}],
        [{"text": "world"}],
    ]
    assert [c.get("append", False) for c in chunks] == [False, True, True]
    assert [c.get("lastChunk", False) for c in chunks] == [False, False, True]
    assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
    task_id = chunks[0]["taskId"]
    stored = (await call(client, "GetTask", {"id": task_id}))["result"]
    # The chunks were for the stream: the stored task holds the answer as one text part.
    (artifact,) = stored["artifacts"]
    assert artifact["parts"] == [{"text": "Hello, world"}]
    assert artifact["name"] == "response"
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_stream_mode_a_blocking_send_answers_with_one_text_part(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(output={"mode": "stream"}))

    task = await send(client, "deltas: Hel|lo, |wor|ld")
    stored = (await call(client, "GetTask", {"id": task["id"]}))["result"]

    for seen in (task, stored):
        (artifact,) = seen["artifacts"]
        assert artifact["name"] == "response"
        assert artifact["parts"] == [{"text": "Hello, world"}]


async def test_the_last_chunk_carries_text_even_when_usage_comes_after_it(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(output={"mode": "stream"}))

    events = await stream(client, "metered: Hel|lo")

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": "Hel"}], [{"text": "lo"}]]
    assert [c.get("lastChunk", False) for c in chunks] == [False, True]
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == "TASK_STATE_COMPLETED"


async def test_final_mode_sends_one_artifact_at_the_end(make_client: MakeClient) -> None:
    client = await make_client(make_settings(output={"mode": "final"}))

    events = await stream(client, "deltas: Hel|lo")

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert [c["artifact"]["parts"] for c in chunks] == [[{"text": "Hello"}]]
    assert chunks[0]["lastChunk"] is True


async def test_progress_off_sends_no_progress_notes(make_client: MakeClient) -> None:
    client = await make_client(make_settings(output={"progress": False}))

    events = await stream(client, "echo: quiet")

    notes = [
        e["statusUpdate"]["status"]
        for e in events
        if "statusUpdate" in e and e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
    ]
    assert all("message" not in n for n in notes)


async def test_settings_reach_the_service(make_client: MakeClient) -> None:
    client = await make_client(make_settings(session={"ttl": 5000, "cleanupInterval": 1000}))

    assert client.app[SERVICE].sweeping_sessions is True
