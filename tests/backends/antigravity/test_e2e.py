"""What is Antigravity's own through the real daemon (the shared cases are in tests/contract):
the warm pool closing agents and resuming their conversations, a file write, a file write the
caller is asked about, a harness that dies mid-turn. Real SDK runtime, the chat completions
mock, one daemon per test."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.backend import procfs
from harness.mock_models.model import MockModel
from harness.mock_models.steps import Hang, Say, WriteFile
from tests.contract.agent import Agent, context, state, status_text, wrapper
from tests.contract.targets import TARGETS, Places
from tests.support.daemon import Daemons
from tests.support.orphans import await_gone

REPO = Path(__file__).resolve().parents[3]
TARGET = next(t for t in TARGETS if t.name == "antigravity")
COMPLETED = "TASK_STATE_COMPLETED"
Serve = Callable[..., Agent]


@pytest.fixture
def model() -> Iterator[MockModel]:
    with MockModel("openai_chat") as mock:
        yield mock


@pytest.fixture
def serve(model: MockModel, tmp_path: Path) -> Iterator[Serve]:
    daemons = Daemons(tmp_path)
    served: list[Agent] = []

    def start(*, block: dict[str, Any] | None = None, **sections: Any) -> Agent:
        places = Places(tmp_path, tmp_path / "cache")
        agent = Agent(TARGET, model, places, daemons, block=block, **sections)
        agent.start()
        served.append(agent)
        return agent

    yield start
    for agent in served:
        agent.close()
    daemons.close()


def harnesses(agent: Agent) -> set[int]:
    return agent.agent_pids()


def test_beyond_max_warm_an_agent_is_closed_and_its_context_resumes_its_conversation(
    serve: Serve, model: MockModel
) -> None:
    agent = serve(block={"maxWarm": 1})
    first, second = context(), context()
    model.script([Say("Noted: KIWI.")])
    one = agent.send("Remember the word KIWI.", first)
    (kiwi,) = harnesses(agent)

    two = agent.send("Say something else.", second)
    await_gone([kiwi])  # the least recently used idle agent went, with its harness
    again = agent.send("Which word was it?", first)

    assert state(one) == state(two) == state(again) == COMPLETED
    assert wrapper(again)["sessionId"] == wrapper(one)["sessionId"]
    asked = model.wait_for_request(lambda r: "Which word was it?" in r.last_user_text)
    assert "Noted: KIWI." in asked.texts("assistant")
    assert len(harnesses(agent)) == 1


def test_a_file_write_lands_in_the_working_directory_and_is_reported(
    serve: Serve, model: MockModel
) -> None:
    agent = serve(output={"mode": "stream", "progress": True})
    target = agent.places.work / "notes.txt"
    model.script([WriteFile(str(target), "hello\n")])

    events = agent.stream("Write the notes.", context())

    assert target.read_text() == "hello\n"
    notes = [
        status_text({"status": e["statusUpdate"]["status"]}) for e in events if "statusUpdate" in e
    ]
    assert f"Edited {target}" in notes
    assert events[-1]["statusUpdate"]["status"]["state"] == COMPLETED


def test_with_file_writes_ask_the_caller_is_asked_about_the_file(
    serve: Serve, model: MockModel
) -> None:
    agent = serve(block={"fileWrites": "ask"}, approvals={"mode": "ask"})
    target = agent.places.work / "asked.txt"
    model.script([WriteFile(str(target), "hello\n")])

    task = agent.send("Write the file.", context())

    assert state(task) == "TASK_STATE_INPUT_REQUIRED", task
    asked = task["status"]["message"]["parts"][1]["data"]
    assert asked["kind"] == "file"
    assert asked["detail"]["path"] == str(target)
    assert asked["summary"] == f"Write {target}"
    assert not target.exists()
    done = agent.reply(task, {"text": "approve"})
    assert state(done) == COMPLETED, done
    assert target.read_text() == "hello\n"


def test_a_harness_killed_mid_turn_fails_the_turn_and_the_next_one_resumes(
    serve: Serve, model: MockModel, leftovers: list[procfs.ProcessInfo]
) -> None:
    agent = serve()
    ctx = context()
    model.script([Say("Noted: LIME.")], [Hang()])
    first = agent.send("Remember the word LIME.", ctx)
    (harness,) = harnesses(agent)
    task = agent.send("Think forever.", ctx, returnImmediately=True)
    model.wait_for_request(lambda r: "Think forever." in r.last_user_text)

    os.kill(harness, signal.SIGKILL)
    done = agent.until_done(task["id"])

    assert state(done) == "TASK_STATE_FAILED", done
    assert "Antigravity runtime exited during the turn" in status_text(done)
    after = agent.send("Which word was it?", ctx)
    assert state(after) == COMPLETED, after
    assert wrapper(after)["sessionId"] == wrapper(first)["sessionId"]
    assert harness not in harnesses(agent)
    asked = model.wait_for_request(lambda r: "Which word was it?" in r.last_user_text)
    assert "Noted: LIME." in asked.texts("assistant")


def test_the_resume_command_names_the_state_whose_block_holds_no_secret(
    serve: Serve, model: MockModel
) -> None:
    agent = serve(block={"env": {"SOME_TOKEN": "t0ken"}})
    home = Path(TARGET.block("", agent.places)["home"])
    model.script([Say("Hello.")])

    task = agent.send("Hello.", context())

    command = wrapper(task)["resumeCommand"]
    assert command.endswith(f"--home {home} --conversation {wrapper(task)['sessionId']}")
    assert "-m wrappers.antigravity.resume" in command
    left = json.loads((home / "a2a-wrapper-block.json").read_text())
    assert left["endpoint"] == {
        "kind": "openai",
        "baseUrl": model.url,
        "project": None,
        "location": None,
    }
    assert "env" not in left
    assert "t0ken" not in json.dumps(left)


def test_an_mcp_server_of_the_block_serves_the_runtimes_mcp_call(
    serve: Serve, model: MockModel
) -> None:
    calc = {"type": "stdio", "command": sys.executable, "args": ["-m", "tests.support.mcp_calc"]}
    agent = serve(block={"mcpServers": {"calc": {**calc, "env": {"PYTHONPATH": str(REPO)}}}})
    call = {"ServerName": "calc", "ToolName": "add", "Arguments": {"a": 2, "b": 3}}

    task = agent.send(f"MOCK_TOOL call_mcp_tool {json.dumps(call)}", context())

    assert state(task) == COMPLETED, task
    assert "sum=5" in model.requests[-1].tool_outputs()[-1]
