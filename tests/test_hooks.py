"""Policy hooks (`hooks.*`), through the real HTTP app: refusal, redaction that reaches every
stream and the stored task, final-status rewrites, and hooks that fail in every way."""

from __future__ import annotations

from typing import Any

import pytest

from core.daemon import create_app
from core.engine.policy import HookLoadError
from tests.conftest import Client, MakeClient, make_settings
from tests.support.hooks import SENSITIVE
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, call, rpc, sse_events, user_message

H = "tests.support.hooks:"


async def send(client: Client, text: str) -> dict[str, Any]:
    body = await call(client, "SendMessage", {"message": user_message(text)})
    task: dict[str, Any] = body["result"]["task"]
    return task


def final_text(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


async def test_before_turn_refusal_rejects_with_the_reason(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(hooks={"beforeTurn": H + "refuse_deploys"}))

    refused = await send(client, "echo: deploy to prod")
    allowed = await send(client, "echo: run the tests")

    assert refused["status"]["state"] == "TASK_STATE_REJECTED"
    assert final_text(refused) == "Deploys are not allowed through this agent"
    assert allowed["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [t.text for t in backend.turns] == ["echo: run the tests"]


@pytest.mark.parametrize("mode", ["final", "stream"])
async def test_redaction_reaches_every_stream_and_the_stored_task(
    make_client: MakeClient, mode: str
) -> None:
    client = await make_client(
        make_settings(hooks={"afterEvent": H + "redact"}, output={"mode": mode})
    )
    text = f"deltas: the password is |{SENSITIVE}| ok"
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message(text)}),
    )
    events = [data["result"] for _, data in await sse_events(response)]
    task_id = events[0]["task"]["id"]
    stored = (await call(client, "GetTask", {"id": task_id}))["result"]

    outgoing = [e for e in events if "task" not in e]  # the first event echoes the user's message
    assert SENSITIVE not in str(outgoing)
    assert SENSITIVE not in str(stored["artifacts"])
    assert SENSITIVE not in str(stored["status"])
    assert "[redacted]" in str(stored["artifacts"])
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_after_event_may_drop_tool_calls(make_client: MakeClient) -> None:
    client = await make_client(make_settings(hooks={"afterEvent": H + "redact"}))
    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("tool: rm")}),
    )

    events = [data["result"] for _, data in await sse_events(response)]

    assert "Running `ls`" not in str(events)
    assert "a2a-wrapper/progress" not in str(events)
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_after_turn_rewrites_the_final_status(make_client: MakeClient) -> None:
    client = await make_client(make_settings(hooks={"afterTurn": H + "reviewed"}))

    task = await send(client, "echo: done")

    assert final_text(task) == "done (reviewed)"


@pytest.mark.parametrize("hook", ["explode", "hang", "nothing", "drop_everything"])
async def test_a_failing_hook_never_leaves_a_task_unfinished(
    make_client: MakeClient, backend: ScriptedBackend, hook: str
) -> None:
    # A string from beforeTurn is a refusal by contract, so "drop" is tried after the turn only.
    names = (
        ["afterEvent", "afterTurn"]
        if hook == "drop_everything"
        else ["beforeTurn", "afterEvent", "afterTurn"]
    )
    everywhere = {name: H + hook for name in names}
    client = await make_client(make_settings(hooks={**everywhere, "timeout": 100}))

    task = await send(client, "echo: still answered")

    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    if hook != "drop_everything":
        assert final_text(task) == "still answered"
    assert len(backend.turns) == 1


@pytest.mark.parametrize(
    ("reference", "problem"),
    [
        ("tests.support.hooks:not_async", "must be an async function"),
        ("tests.support.hooks:missing", "cannot load hook"),
        ("no_colon", "package.module:function"),
    ],
)
def test_a_wrong_hook_reference_fails_at_start(
    backend: ScriptedBackend, reference: str, problem: str
) -> None:
    with pytest.raises(HookLoadError, match=problem):
        create_app(make_settings(hooks={"afterTurn": reference}), backend=backend)
