"""The echo agent through the real app: it answers with what it is sent, streams it, honours
cancel, asks a question and writes a file in its working directory when told to."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio

from core import registry
from tests.conftest import Client, MakeClient, make_settings
from tests.support.wire import V1, call, rpc, sse_events, user_message


async def echo_client(make_client: MakeClient, work: Path, **more: Any) -> Client:
    settings = make_settings(
        backend="echo",
        echo={"workingDirectory": str(work), "chunkDelay": 1},
        output={"mode": "stream"},
        **more,
    )
    backend = registry.create_backend("echo", settings.backend_config())
    return await make_client(settings, backend_=backend)


def text_of(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


async def send(client: Client, text: str, **message: Any) -> dict[str, Any]:
    body = await call(client, "SendMessage", {"message": user_message(text, **message)})
    task: dict[str, Any] = body["result"]["task"]
    return task


async def test_it_answers_with_the_message(make_client: MakeClient, tmp_path: Path) -> None:
    client = await echo_client(make_client, tmp_path)

    task = await send(client, "hello  there\nsecond line")

    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert text_of(task) == "hello  there\nsecond line"


async def test_it_streams_the_answer_in_pieces(make_client: MakeClient, tmp_path: Path) -> None:
    client = await echo_client(make_client, tmp_path)

    response = await client.post(
        "/a2a/jsonrpc",
        json=rpc("SendStreamingMessage", {"message": user_message("one two three four")}),
        headers=V1,
    )
    events = [data["result"] for _, data in await sse_events(response)]

    pieces = [
        e["artifactUpdate"]["artifact"]["parts"][0]["text"] for e in events if "artifactUpdate" in e
    ]
    assert pieces == ["one ", "two ", "three ", "four"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_it_asks_when_told_to_and_goes_on_with_the_answer(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await echo_client(make_client, tmp_path)

    asked = await send(client, "ask: which branch?")
    answered = await send(
        client, "main", messageId="m-2", taskId=asked["id"], contextId=asked["contextId"]
    )

    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert asked["status"]["message"]["parts"] == [{"text": "which branch?"}]
    assert answered["status"]["state"] == "TASK_STATE_COMPLETED"
    assert text_of(answered) == "main"


async def test_it_writes_a_file_in_its_working_directory(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await echo_client(make_client, tmp_path)

    wrote = await send(client, "write: notes/todo.txt\nfirst\nsecond")
    outside = await send(client, "write: ../escape.txt\nno", messageId="m-2")

    assert (tmp_path / "notes" / "todo.txt").read_text() == "first\nsecond\n"
    assert text_of(wrote) == "Wrote notes/todo.txt (13 bytes)."
    assert "relative path inside the working directory" in text_of(outside)
    assert not (tmp_path.parent / "escape.txt").exists()


async def test_cancel_stops_it(make_client: MakeClient, tmp_path: Path) -> None:
    client = await echo_client(make_client, tmp_path)
    params = {"message": user_message("sleep: 300"), "configuration": {"returnImmediately": True}}
    started = (await call(client, "SendMessage", params))["result"]["task"]

    with anyio.fail_after(30):
        canceled = (await call(client, "CancelTask", {"id": started["id"]}))["result"]

    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"


async def test_under_ask_it_writes_only_what_the_caller_approves(
    make_client: MakeClient, tmp_path: Path
) -> None:
    client = await echo_client(make_client, tmp_path, approvals={"mode": "ask"})

    asked = await send(client, "write: a.txt\nyes")
    approved = await send(client, "approve", messageId="m-2", taskId=asked["id"])
    refused = await send(client, "write: b.txt\nno", messageId="m-3")
    denied = await send(client, "deny", messageId="m-4", taskId=refused["id"])

    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    question = asked["status"]["message"]["parts"][1]["data"]
    assert (question["kind"], question["tool"]) == ("file", "write")
    assert text_of(approved) == "Wrote a.txt (4 bytes)."
    assert (tmp_path / "a.txt").read_text() == "yes\n"
    assert text_of(denied) == "Not written: b.txt (denied)."
    assert not (tmp_path / "b.txt").exists()
