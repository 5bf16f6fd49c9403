"""`approvals.mode: ask` with the real OpenCode against the mock model: a bash command that
`opencode.permission` says to ask about reaches the caller as an input-required question, and
the answer (or its absence, or a cancel) decides what the agent sees. Real app, real
`opencode serve`, mock model."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.settings import Settings
from tests.backends.opencode.conftest import Client, MakeSettings, StartDaemon
from tests.backends.opencode.support import answer, send, status_text, wrapper_metadata
from tests.support.mock_models.openai_chat import ChatRequest, OpenAIChatMock, ToolCallReply
from tests.support.wire import V1, call, rpc, sse_events, user_message

pytestmark = pytest.mark.timeout(120)

COMPLETED = "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
COMMAND = "echo ran > ran.txt && echo ran-it"
RUN = ToolCallReply("bash", {"command": COMMAND, "description": "Write ran.txt"})
ASK = {"mode": "ask"}


def settings_asking(opencode_settings: MakeSettings, **approvals: Any) -> Settings:
    """OpenCode asks before any bash command; the caller is asked in turn."""
    return opencode_settings(
        approvals={**ASK, **approvals}, opencode={"permission": {"bash": "ask"}}
    )


async def ask(
    client: Client, mock: OpenAIChatMock, context_id: str, **config: Any
) -> dict[str, Any]:
    mock.reply(RUN, when="run the command")
    message = user_message(
        "Please run the command.", contextId=context_id, messageId=str(uuid.uuid4())
    )
    body = await call(client, "SendMessage", {"message": message, "configuration": config})
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def reply(client: Client, task: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """The caller's answer on the task (blocking send): a text or a data part."""
    message = user_message("", taskId=task["id"], messageId=str(uuid.uuid4()))
    message["parts"] = [part]
    body = await call(client, "SendMessage", {"message": message})
    assert "result" in body, body
    done: dict[str, Any] = body["result"]["task"]
    return done


async def until_done(client: Client, task_id: str) -> dict[str, Any]:
    """Follow the task (SubscribeToTask) until it is terminal, then read it."""
    with anyio.fail_after(30):
        while True:
            response = await client.post(
                "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
            )
            if response.content_type == "application/json":
                break
            await sse_events(response)
    task: dict[str, Any] = (await call(client, "GetTask", {"id": task_id}))["result"]
    return task


def tool_output(request: ChatRequest) -> str:
    """The last tool result the model saw in `request`."""
    outputs = request.texts("tool")
    assert outputs, request.messages
    return outputs[-1]


def ran(project: Path) -> bool:
    return (project / "ran.txt").exists()


async def test_the_command_becomes_an_input_required_question_with_the_request(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    client = await start_daemon(settings_asking(opencode_settings))

    task = await ask(client, mock, "ctx-ask")

    assert task["status"]["state"] == INPUT_REQUIRED, task
    text, data = task["status"]["message"]["parts"]
    assert f"Run `{COMMAND}` in the working directory" in text["text"]
    question = data["data"]
    assert question["type"] == "a2a-wrapper/approval-request"
    assert question["kind"] == "command"
    assert question["tool"] == "bash"
    assert question["summary"] == f"Run `{COMMAND}` in the working directory"
    assert question["options"] == ["approve", "approve_always", "deny"]
    assert question["detail"]["permission"] == "bash"
    assert question["detail"]["metadata"]["command"] == COMMAND
    assert question["detail"]["patterns"]
    assert not ran(project), "the turn waits before the tool"
    assert len(mock.requests) == 1
    await call(client, "CancelTask", {"id": task["id"]})


async def test_approve_runs_the_tool_and_the_turn_completes(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    client = await start_daemon(settings_asking(opencode_settings))
    asked = await ask(client, mock, "ctx-yes")

    done = await reply(client, asked, {"text": "approve"})

    assert done["id"] == asked["id"]
    assert done["status"]["state"] == COMPLETED, done
    assert answer(done) == "TOOL RESULT SEEN: ran-it\n"
    assert (project / "ran.txt").read_text() == "ran\n"
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["by"]) == ("approve", "caller")
    assert decision["tool"] == "bash"


async def test_deny_makes_the_agent_see_the_denial_with_the_callers_message(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    client = await start_daemon(settings_asking(opencode_settings))
    asked = await ask(client, mock, "ctx-no")

    done = await reply(client, asked, {"data": {"decision": "deny", "message": "Not on Fridays."}})

    assert done["status"]["state"] == COMPLETED, done
    seen = tool_output(mock.requests[-1])
    assert "The user rejected permission to use this specific tool call" in seen
    assert "with the following feedback: Not on Fridays." in seen
    assert answer(done).startswith("TOOL RESULT SEEN: ")
    assert not ran(project)
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["by"]) == ("deny", "caller")


async def test_approve_always_is_not_asked_again_in_the_session(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    client = await start_daemon(settings_asking(opencode_settings))
    asked = await ask(client, mock, "ctx-always")
    first = await reply(client, asked, {"text": "approve always"})
    (project / "ran.txt").unlink()

    again = await ask(client, mock, "ctx-always")

    assert first["status"]["state"] == COMPLETED, first
    assert again["status"]["state"] == COMPLETED, "no second question"
    assert wrapper_metadata(again)["sessionId"] == wrapper_metadata(first)["sessionId"]
    assert "approvals" not in wrapper_metadata(again)
    assert ran(project)


async def test_an_unanswered_question_is_denied_after_the_timeout_and_the_turn_goes_on(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    client = await start_daemon(settings_asking(opencode_settings, timeout=300))
    asked = await ask(client, mock, "ctx-late", returnImmediately=True)

    done = await until_done(client, asked["id"])

    assert done["status"]["state"] == COMPLETED, done
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["by"]) == ("deny", "timeout")
    assert "No answer came within approvals.timeout." in tool_output(mock.requests[-1])
    assert answer(done).startswith("TOOL RESULT SEEN: ")
    assert not ran(project)


async def test_on_timeout_fail_fails_the_task_and_the_context_goes_on(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    settings = settings_asking(opencode_settings, timeout=300, onTimeout="fail")
    client = await start_daemon(settings)
    asked = await ask(client, mock, "ctx-fail", returnImmediately=True)

    done = await until_done(client, asked["id"])

    assert done["status"]["state"] == "TASK_STATE_FAILED", done
    assert "approvals.timeout" in status_text(done)
    assert not ran(project)
    after = await send(client, "Are you still there?", context_id="ctx-fail", message_id="m-9")
    assert after["status"]["state"] == COMPLETED, after
    assert answer(after) == "MOCK REPLY: Are you still there?"
    assert wrapper_metadata(after)["sessionId"] == wrapper_metadata(done)["sessionId"]
    assert not ran(project)


async def test_cancel_while_the_question_waits_stops_the_turn_and_the_context_goes_on(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    project: Path,
) -> None:
    client = await start_daemon(settings_asking(opencode_settings))
    asked = await ask(client, mock, "ctx-stop")

    started = time.monotonic()
    canceled = (await call(client, "CancelTask", {"id": asked["id"]}))["result"]
    elapsed = time.monotonic() - started

    assert canceled["status"]["state"] == "TASK_STATE_CANCELED", canceled
    assert elapsed < 2, "OpenCode let go of the question at the abort"
    after = await send(client, "Are you still there?", context_id="ctx-stop", message_id="m-9")
    assert after["status"]["state"] == COMPLETED, after
    assert answer(after) == "MOCK REPLY: Are you still there?"
    assert wrapper_metadata(after)["sessionId"] == wrapper_metadata(asked)["sessionId"]
    assert not ran(project)
    # The abort ended the paused turn: the model was not called again before the next turn.
    assert [r.last_user_text for r in mock.requests if r.tool_names] == [
        "Please run the command.",
        "Are you still there?",
    ]
