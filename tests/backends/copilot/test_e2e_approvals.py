"""Copilot's approval quirks (every backend's approval cases are in
tests/contract/test_approvals.py): a file write outside the working directory is asked as a file
request, and a plain deny tells the agent the caller denied it. Real app, real CLI, mock model."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

from harness.mock_models.openai_chat import OpenAIChatMock
from tests.backends.copilot.a2a import (
    Client,
    Task,
    message,
    send,
    state,
    wrapper_metadata,
)
from tests.backends.copilot.conftest import AppFactory, SettingsFactory
from tests.support.wire import call, user_message

COMPLETED = "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
ASK = {"mode": "ask"}


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


def tool_result(mock: OpenAIChatMock) -> str:
    """The last tool result the model saw."""
    results = mock.requests[-1].texts("tool")
    assert results, mock.requests[-1].messages
    return results[-1]


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
