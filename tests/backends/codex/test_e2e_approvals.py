"""Codex's approval quirks (every backend's approval cases are in tests/contract/test_approvals.py):
policy mode asks nothing, and a patch outside the writable roots is asked as a file request.
The daemon's HTTP app serving the real codex binary against the mock model."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from harness.mock_models.openai_responses import ResponsesMock
from harness.mock_models.steps import Shell, WriteFile
from tests.backends.codex.conftest import Client, MakeCodexClient
from tests.backends.codex.test_e2e import send, wrapper
from tests.support.wire import call, user_message

ASK = {"mode": "ask"}
COMPLETED = "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
WHY = "The marker lives outside the working directory."


def outside(tmp_path: Path) -> Path:
    """A file the workspace-write sandbox does not let a command create."""
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    return folder / "marker"


async def ask(client: Client, mock: ResponsesMock, marker: Path, **config: Any) -> dict[str, Any]:
    mock.turns.add([Shell(f"touch {marker}", escalate=WHY)])
    return await send(client, "Create the marker.", **config)


async def answer(client: Client, task_id: str, part: dict[str, Any]) -> dict[str, Any]:
    message = user_message("", taskId=task_id, messageId=f"answer-{task_id}-{time.monotonic()}")
    message["parts"] = [part]
    body = await call(client, "SendMessage", {"message": message})
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def question(task: dict[str, Any]) -> dict[str, Any]:
    data: dict[str, Any] = task["status"]["message"]["parts"][1]["data"]
    return data


async def test_policy_mode_asks_nothing(
    make_codex_client: MakeCodexClient, mock: ResponsesMock, tmp_path: Path
) -> None:
    client = await make_codex_client()
    marker = outside(tmp_path)

    done = await ask(client, mock, marker)

    assert done["status"]["state"] == COMPLETED
    assert "approvals" not in wrapper(done)
    assert not marker.exists()


async def test_a_patch_outside_the_writable_roots_is_asked_and_applied_once_approved(
    make_codex_client: MakeCodexClient, mock: ResponsesMock, tmp_path: Path
) -> None:
    client = await make_codex_client(approvals=ASK)
    target = outside(tmp_path).with_name("patched.txt")
    mock.turns.add([WriteFile(str(target), "hello")])  # an apply_patch adding the file
    asked = await send(client, "Write the file.")

    assert asked["status"]["state"] == INPUT_REQUIRED
    request = question(asked)
    assert (request["kind"], request["tool"]) == ("file", "apply_patch")
    assert request["detail"]["paths"] == [str(target)]

    done = await answer(client, asked["id"], {"text": "approve"})

    assert done["status"]["state"] == COMPLETED
    assert target.read_text() == "hello\n"
