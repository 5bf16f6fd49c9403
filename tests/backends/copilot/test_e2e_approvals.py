"""`approvals.mode: ask` with the real Copilot CLI against the mock model: what only the default
permission policy would refuse (here a shell command that writes outside the working directory)
reaches the caller as an input-required question, and the answer (or its absence, or a cancel)
decides what the agent sees. Real app, real CLI, mock model."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path
from typing import Any

import anyio

from tests.backends.copilot.a2a import (
    Client,
    Task,
    answer,
    cancel,
    message,
    send,
    state,
    status_text,
    wait_done,
    wrapper_metadata,
)
from tests.backends.copilot.conftest import AppFactory, SettingsFactory, cli_pids
from tests.support.mock_models.openai_chat import OpenAIChatMock
from tests.support.wire import call, user_message

COMPLETED = "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
ASK = {"mode": "ask"}
TERMINAL = ("COMPLETED", "FAILED", "CANCELED")


def outside(tmp_path: Path) -> Path:
    """A file outside the working directory: the default policy would refuse to write it."""
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    return folder / "ran.txt"


def command(marker: Path) -> str:
    return f"echo ran > {marker} && echo ran-it"


def run_prompt(marker: Path) -> str:
    arguments = {"command": command(marker), "description": "Write the marker"}
    return f"MOCK_TOOL bash {json.dumps(arguments)}"


async def ask(client: Client, marker: Path, context_id: str = "ctx", **config: Any) -> Task:
    body = await call(
        client,
        "SendMessage",
        {"message": message(run_prompt(marker), context_id), "configuration": config},
    )
    assert "result" in body, body
    task: Task = body["result"]["task"]
    return task


async def reply(client: Client, task: Task, part: dict[str, Any]) -> Task:
    """The caller's answer on the task (blocking send): a text or a data part."""
    answer_message = user_message("", taskId=task["id"], messageId=str(uuid.uuid4()))
    answer_message["parts"] = [part]
    body = await call(client, "SendMessage", {"message": answer_message})
    assert "result" in body, body
    done: Task = body["result"]["task"]
    return done


async def until_done(client: Client, task_id: str) -> Task:
    """Follow the task until it is terminal, then read it."""
    with anyio.fail_after(30):
        task = await wait_done(client, task_id)
        while not task["status"]["state"].endswith(TERMINAL):
            task = await wait_done(client, task_id)
    return task


def tool_result(mock: OpenAIChatMock) -> str:
    """The last tool result the model saw."""
    results = mock.requests[-1].texts("tool")
    assert results, mock.requests[-1].messages
    return results[-1]


async def test_the_command_becomes_an_input_required_question_with_the_request(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    marker = outside(tmp_path)

    task = await ask(client, marker)

    assert state(task) == INPUT_REQUIRED, task
    text, data = task["status"]["message"]["parts"]
    question = data["data"]
    summary = question["summary"]
    assert summary.startswith("The shell command 'echo ran > /")
    assert summary.endswith("\u2026'")  # a long command is clipped; detail has all of it
    assert summary in text["text"]
    assert question["type"] == "a2a-wrapper/approval-request"
    assert question["kind"] == "command"
    assert question["tool"] == "shell"
    assert question["options"] == ["approve", "approve_always", "deny"]
    assert question["detail"]["command"] == command(marker)
    assert f"names {marker}, outside the working directory" in question["detail"]["reason"]
    assert not marker.exists(), "the turn waits before the tool"
    assert len(mock.requests) == 1
    await cancel(client, task["id"])


async def test_approve_runs_the_tool_and_the_turn_completes(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    marker = outside(tmp_path)
    asked = await ask(client, marker)

    done = await reply(client, asked, {"text": "approve"})

    assert done["id"] == asked["id"]
    assert state(done) == COMPLETED, done
    assert marker.read_text() == "ran\n"
    assert "ran-it" in tool_result(mock)
    assert answer(done).startswith("TOOL RESULT SEEN: ")
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["by"]) == ("approve", "caller")
    assert decision["tool"] == "shell"


async def test_a_write_outside_is_asked_as_a_file_request_and_done_once_approved(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    target = tmp_path / "approved.txt"
    arguments = {"path": str(target), "file_text": "ok\n"}

    asked = await send(client, f"MOCK_TOOL create {json.dumps(arguments)}")

    assert state(asked) == INPUT_REQUIRED, asked
    question = asked["status"]["message"]["parts"][1]["data"]
    assert (question["kind"], question["tool"]) == ("file", "write")
    assert question["detail"]["path"] == str(target)
    assert not target.exists()
    done = await reply(client, asked, {"text": "approve"})
    assert state(done) == COMPLETED, done
    assert target.read_text() == "ok\n"
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["tool"]) == ("approve", "write")


async def test_deny_makes_the_agent_see_the_denial_with_the_callers_message(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    marker = outside(tmp_path)
    asked = await ask(client, marker)

    done = await reply(client, asked, {"data": {"decision": "deny", "message": "Not on Fridays."}})

    assert state(done) == COMPLETED, done
    assert "Not on Fridays." in tool_result(mock)
    assert answer(done).startswith("TOOL RESULT SEEN: ")
    assert not marker.exists()
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["by"]) == ("deny", "caller")


async def test_plain_deny_tells_the_agent_the_caller_denied_it(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    marker = outside(tmp_path)
    asked = await ask(client, marker)

    done = await reply(client, asked, {"text": "deny"})

    assert state(done) == COMPLETED, done
    assert "The caller denied this" in tool_result(mock)
    assert not marker.exists()


async def test_approve_always_holds_for_the_same_command_in_the_session(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    marker = outside(tmp_path)
    asked = await ask(client, marker)
    first = await reply(client, asked, {"text": "approve always"})
    marker.unlink()

    again = await ask(client, marker)

    assert state(first) == COMPLETED, first
    assert state(again) == COMPLETED, "no second question"
    assert wrapper_metadata(again)["sessionId"] == wrapper_metadata(first)["sessionId"]
    assert "approvals" not in wrapper_metadata(again)
    assert marker.read_text() == "ran\n"


async def test_an_unanswered_question_is_denied_after_the_timeout_and_the_turn_goes_on(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals={**ASK, "timeout": 300}))
    marker = outside(tmp_path)
    asked = await ask(client, marker, returnImmediately=True)

    done = await until_done(client, asked["id"])

    assert state(done) == COMPLETED, done
    (decision,) = wrapper_metadata(done)["approvals"]
    assert (decision["decision"], decision["by"]) == ("deny", "timeout")
    assert "No answer came within approvals.timeout." in tool_result(mock)
    assert answer(done).startswith("TOOL RESULT SEEN: ")
    assert not marker.exists()


async def test_on_timeout_fail_fails_the_task_and_the_context_goes_on(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    settings = copilot_settings(approvals={**ASK, "timeout": 300, "onTimeout": "fail"})
    client = await copilot_app(settings)
    marker = outside(tmp_path)
    asked = await ask(client, marker, returnImmediately=True)

    done = await until_done(client, asked["id"])
    children = cli_pids()

    assert state(done) == "TASK_STATE_FAILED", done
    assert "approvals.timeout" in status_text(done)
    assert not marker.exists()
    after = await send(client, "Are you still there?")
    assert state(after) == COMPLETED, after
    assert answer(after).endswith("Are you still there?")
    assert wrapper_metadata(after)["sessionId"] == wrapper_metadata(done)["sessionId"]
    assert cli_pids() == children, "the turn was stopped by its abort, not by killing the CLI"
    assert not marker.exists()


async def test_cancel_while_the_question_waits_stops_the_turn_and_the_context_goes_on(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock, tmp_path: Path
) -> None:
    client = await copilot_app(copilot_settings(approvals=ASK))
    marker = outside(tmp_path)
    asked = await ask(client, marker)
    children = cli_pids()

    began = time.monotonic()
    canceled = await cancel(client, asked["id"])
    took = time.monotonic() - began

    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    assert took < 2, f"cancel took {took:.2f} s"
    assert cli_pids() == children, "the CLI stopped the turn at the abort and was not killed"
    after = await send(client, "Are you still there?")
    assert state(after) == COMPLETED, after
    assert answer(after).endswith("Are you still there?")
    assert wrapper_metadata(after)["sessionId"] == wrapper_metadata(asked)["sessionId"]
    assert not marker.exists()
