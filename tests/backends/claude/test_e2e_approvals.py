"""`approvals.mode: ask` with the real Claude Code CLI against the mock model: a command that
`acceptEdits` leaves open reaches the caller as an input-required question, and the answer
decides what the agent sees. Real app, real CLI, mock model."""

from __future__ import annotations

import uuid
from typing import Any

import anyio

from tests.backends.claude.conftest import (
    CANCELED,
    COMPLETED,
    FAILED,
    ClaudeEnv,
    Client,
    StartDaemon,
    claude_processes,
    send,
    wrapper,
)
from tests.support.mock_models.anthropic import AnthropicMock, Reply, ToolUse
from tests.support.wire import V1, call, rpc, sse_events, user_message

INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
# Not read-only and not a file edit: acceptEdits leaves it to the permission callback.
COMMAND = "python3 -c \"open('ran.txt', 'w').write('ran')\" && echo ran-it"
RUN = Reply(
    text="I will run a command.",
    tool_use=ToolUse("Bash", {"command": COMMAND, "description": "write ran.txt"}),
)
ASK = {"mode": "ask"}


def parts(task: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = task["status"]["message"]["parts"]
    return found


async def reply(client: Client, task: dict[str, Any], **part: Any) -> dict[str, Any]:
    """The caller's answer on the task (blocking send): a text or a data part."""
    message = user_message(
        "", taskId=task["id"], contextId=task["contextId"], messageId=str(uuid.uuid4())
    )
    message["parts"] = [part]
    body = await call(client, "SendMessage", {"message": message})
    assert "result" in body, body
    done: dict[str, Any] = body["result"]["task"]
    return done


async def until_done(client: Client, task_id: str) -> dict[str, Any]:
    """Follow the task (SubscribeToTask) until it is terminal, then read it."""
    with anyio.fail_after(20):
        while True:
            response = await client.post(
                "/a2a/jsonrpc", headers=V1, json=rpc("SubscribeToTask", {"id": task_id})
            )
            if response.content_type == "application/json":
                break
            await sse_events(response)
    task: dict[str, Any] = (await call(client, "GetTask", {"id": task_id}))["result"]
    return task


def tool_result(mock: AnthropicMock) -> dict[str, Any]:
    """The tool result in the model request after the tool call."""
    request = mock.model_requests[1]
    block: dict[str, Any] = request.messages[-1]["content"][0]
    assert block["type"] == "tool_result"
    return block


async def test_the_command_becomes_an_input_required_question_with_the_request(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon(claude_env.settings(approvals=ASK))

    task = await send(client, "Please run it.", "ctx-ask")

    assert task["status"]["state"] == INPUT_REQUIRED
    text, data = parts(task)
    assert f"Run `{COMMAND}` in the working directory" in text["text"]
    question = data["data"]
    assert question["type"] == "a2a-wrapper/approval-request"
    assert question["kind"] == "command"
    assert question["tool"] == "Bash"
    assert question["summary"] == f"Run `{COMMAND}` in the working directory"
    assert question["detail"]["command"] == COMMAND
    assert question["detail"]["input"] == {"command": COMMAND, "description": "write ran.txt"}
    assert not (claude_env.workdir / "ran.txt").exists(), "the turn waits before the tool"
    assert len(mock.model_requests) == 1
    await call(client, "CancelTask", {"id": task["id"]})


async def test_approve_runs_the_tool_and_the_turn_completes(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon(claude_env.settings(approvals=ASK))
    asked = await send(client, "Please run it.", "ctx-yes")

    done = await reply(client, asked, text="approve")

    assert done["id"] == asked["id"]
    assert done["status"]["state"] == COMPLETED
    assert parts(done)[0]["text"] == "I will run a command.\n\nMOCK saw tool result: ran-it"
    assert (claude_env.workdir / "ran.txt").read_text() == "ran"
    assert tool_result(mock)["is_error"] is False
    assert wrapper(done)["approvals"][0]["decision"] == "approve"


async def test_deny_makes_the_agent_see_the_denial_with_the_callers_message(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon(claude_env.settings(approvals=ASK))
    asked = await send(client, "Please run it.", "ctx-no")

    done = await reply(client, asked, data={"decision": "deny", "message": "Not on Fridays."})

    assert done["status"]["state"] == COMPLETED
    result = tool_result(mock)
    assert result["is_error"] is True
    assert "Not on Fridays." in str(result["content"])
    assert parts(done)[0]["text"].startswith("I will run a command.\n\nMOCK saw tool result: ")
    assert not (claude_env.workdir / "ran.txt").exists()


async def test_approve_always_holds_for_the_rest_of_the_session(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon(claude_env.settings(approvals=ASK))
    asked = await send(client, "Please run it.", "ctx-always")
    first = await reply(client, asked, text="approve always")
    (claude_env.workdir / "ran.txt").unlink()

    again = await send(client, "Please run it again.", "ctx-always")

    assert first["status"]["state"] == COMPLETED
    assert again["status"]["state"] == COMPLETED, "no second question"
    assert (claude_env.workdir / "ran.txt").read_text() == "ran"


async def test_an_unanswered_question_is_denied_after_the_timeout(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon(claude_env.settings(approvals={**ASK, "timeout": 300}))
    asked = await send(client, "Please run it.", "ctx-late", returnImmediately=True)

    done = await until_done(client, asked["id"])

    assert done["status"]["state"] == COMPLETED
    assert "No answer came within approvals.timeout." in str(tool_result(mock)["content"])
    assert wrapper(done)["approvals"][0]["by"] == "timeout"
    assert not (claude_env.workdir / "ran.txt").exists()


async def test_cancel_while_the_question_waits_stops_the_turn_and_the_context_goes_on(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon(claude_env.settings(approvals=ASK))
    asked = await send(client, "Please run it.", "ctx-stop")
    process = claude_processes()

    canceled = (await call(client, "CancelTask", {"id": asked["id"]}))["result"]

    assert canceled["status"]["state"] == CANCELED
    assert not (claude_env.workdir / "ran.txt").exists()
    after = await send(client, "Are you still there?", "ctx-stop")
    assert after["status"]["state"] == COMPLETED
    assert wrapper(after)["sessionId"] == wrapper(asked)["sessionId"]
    assert claude_processes() == process, "the interrupted process stays warm and is reused"


async def test_policy_mode_asks_nothing_and_the_command_is_denied(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    client = await start_daemon()

    task = await send(client, "Please run it.", "ctx-policy")

    assert task["status"]["state"] == COMPLETED
    assert tool_result(mock)["is_error"] is True
    assert not (claude_env.workdir / "ran.txt").exists()


async def test_on_timeout_fail_stops_the_agent_and_fails_the_task(
    claude_env: ClaudeEnv, start_daemon: StartDaemon, mock: AnthropicMock
) -> None:
    mock.on("run it", RUN)
    settings = claude_env.settings(approvals={**ASK, "timeout": 300, "onTimeout": "fail"})
    client = await start_daemon(settings)
    asked = await send(client, "Please run it.", "ctx-fail", returnImmediately=True)

    done = await until_done(client, asked["id"])
    process = claude_processes()

    assert done["status"]["state"] == FAILED
    assert "approvals.timeout" in parts(done)[0]["text"]
    assert not (claude_env.workdir / "ran.txt").exists()
    after = await send(client, "Are you still there?", "ctx-fail")
    assert after["status"]["state"] == COMPLETED
    assert len(process) == 1
    assert claude_processes() == process, "stopped by its interrupt, not killed"
