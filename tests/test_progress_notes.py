"""Progress worth reading through the real app: a tool step's WORKING update says what it does
in words and carries the same facts as an `a2a-wrapper/progress` data part; `output.progress`
off sends neither."""

from __future__ import annotations

from typing import Any

from tests.conftest import MakeClient, make_settings
from tests.support.wire import V1, rpc, sse_events, user_message


async def notes(make_client: MakeClient, **settings: Any) -> list[list[dict[str, Any]]]:
    client = await make_client(make_settings(**settings))
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("tool: pytest")}),
    )
    events = [data["result"] for _, data in await sse_events(response)]
    return [
        e["statusUpdate"]["status"]["message"]["parts"]
        for e in events
        if "statusUpdate" in e
        and e["statusUpdate"]["status"]["state"] == "TASK_STATE_WORKING"
        and "message" in e["statusUpdate"]["status"]
    ]


async def test_a_tool_step_is_a_line_and_its_facts(make_client: MakeClient) -> None:
    [parts] = await notes(make_client)

    text, data = parts
    assert text == {"text": "Running `ls`"}
    assert data["mediaType"] == "application/json"
    assert data["data"] == {
        "type": "a2a-wrapper/progress",
        "tool": "pytest",
        "input": "ls",
        "callId": "call-1",
    }


async def test_progress_off_sends_no_step(make_client: MakeClient) -> None:
    assert await notes(make_client, output={"progress": False}) == []
