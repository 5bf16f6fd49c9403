"""Every backend: a contextId is one conversation (across turns and a daemon restart), text
streams as artifact chunks, cancel stops the agent and its tool, and an upstream error fails the
task without quoting the upstream body. One daemon per backend serves the whole module (output
mode stream, policy approvals, its shell tool allowed)."""

from __future__ import annotations

import json

import pytest

from core.backend import procfs
from harness.mock_models.model import MockModel
from harness.mock_models.steps import Hang, Say, Shell, Upstream
from tests.contract.agent import (
    Agent,
    answer,
    context,
    state,
    status_text,
    wrapper,
    write_marker,
)
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget
from tests.support.errors import SECRET
from tests.support.orphans import await_gone, cmdline

COMPLETED = "TASK_STATE_COMPLETED"
# Claude Code refuses a command that starts with a long sleep.
SLEEP = "echo waiting && sleep 1000"
STREAMED = "Streaming, one small piece at a time, in order, as the model sends it."


@pytest.fixture(scope="module")
def agent(target: BackendTarget, serve: Serve) -> Agent:
    return serve(block=target.runs_shell, output={"mode": "stream"})


def test_two_turns_on_one_context_are_one_conversation(agent: Agent, model: MockModel) -> None:
    ctx = context()
    model.script([Say("Noted: PAPAYA.")])
    first = agent.send("Remember the word PAPAYA.", ctx)
    agents = agent.agent_pids()
    second = agent.send("Which word did I ask you to remember?", ctx)

    assert state(first) == state(second) == COMPLETED, (first, second)
    assert answer(first) == "Noted: PAPAYA."
    turn_two = model.wait_for_request(lambda r: "Which word" in r.last_user_text)
    assert any(t.endswith("Remember the word PAPAYA.") for t in turn_two.texts("user"))
    assert "Noted: PAPAYA." in turn_two.texts("assistant")
    session = wrapper(first)["sessionId"]
    assert wrapper(second)["sessionId"] == session
    assert (wrapper(first)["newSession"], wrapper(second)["newSession"]) == (True, False)
    assert wrapper(second)["backend"] == agent.target.name
    assert wrapper(second)["resumeCommand"].endswith(agent.target.resume.format(session))
    assert agent.agent_pids() == agents, "the follow-up ran on the warm agent"


@pytest.mark.needs("resume")
def test_after_a_daemon_restart_the_context_resumes_its_session(
    agent: Agent, model: MockModel
) -> None:
    ctx = context()
    model.script([Say("Noted: MANGO.")])
    first = agent.send("Remember the word MANGO.", ctx)
    assert state(first) == COMPLETED, first

    agent.restart()  # SIGTERM: the agent stops with the daemon; the storage stays
    events = agent.stream("What did I ask you to remember?", ctx)
    again = agent.get(events[-1]["statusUpdate"]["taskId"])

    assert state(again) == COMPLETED, again
    if not agent.target.loads_sessions and wrapper(again)["newSession"]:
        # The agent could not continue it: the daemon says so, and why, instead of pretending.
        assert wrapper(again)["sessionId"] != wrapper(first)["sessionId"]
        notes = [status_text(e["statusUpdate"]) for e in events if "statusUpdate" in e]
        assert any("new one" in note for note in notes), notes
        return
    assert wrapper(again)["sessionId"] == wrapper(first)["sessionId"]
    assert wrapper(again)["newSession"] is False
    resumed = model.wait_for_request(lambda r: "What did I ask" in r.last_user_text)
    assert any(t.endswith("Remember the word MANGO.") for t in resumed.texts("user"))
    assert "Noted: MANGO." in resumed.texts("assistant")


@pytest.mark.needs("streaming")
def test_stream_mode_sends_the_text_once_as_ordered_artifact_chunks(
    agent: Agent, model: MockModel
) -> None:
    model.script([Say(STREAMED)])

    events = agent.stream("Stream something.", context())

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    assert len(chunks) >= 3, "the text arrives in pieces, as the model streams it"
    assert "".join(p["text"] for c in chunks for p in c["artifact"]["parts"]) == STREAMED
    assert [c.get("append", False) for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.get("lastChunk", False) for c in chunks] == [False] * (len(chunks) - 1) + [True]
    assert len({c["artifact"]["artifactId"] for c in chunks}) == 1
    final = events[-1]["statusUpdate"]["status"]
    assert final["state"] == COMPLETED
    stored = agent.get(chunks[0]["taskId"])
    assert state(stored) == COMPLETED
    assert answer(stored) == STREAMED


def test_cancel_while_the_model_hangs_lets_go_of_the_request_and_the_context_goes_on(
    agent: Agent, model: MockModel
) -> None:
    ctx = context()
    model.script([Say("Noted: FIG.")], [Hang()])
    first = agent.send("Remember the word FIG.", ctx)
    agents = agent.agent_pids()
    task = agent.send("Please think forever.", ctx, returnImmediately=True)
    hung = model.wait_for_request(lambda r: "think forever" in r.last_user_text)

    canceled = agent.cancel(task["id"])

    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    model.wait_until(lambda: hung.went_away or None, timeout=10)
    after = agent.send("Which word was it?", ctx)
    assert state(after) == COMPLETED, after
    request = model.wait_for_request(lambda r: "Which word was it?" in r.last_user_text)
    assert "Noted: FIG." in request.texts("assistant")
    asked = [r for r in model.requests if "think forever" in r.last_user_text]
    assert asked == [hung], "the canceled turn asked the model nothing more"
    assert wrapper(after)["sessionId"] == wrapper(first)["sessionId"]
    assert agent.agent_pids() == agents, "the agent stopped the turn and was not replaced"


@pytest.mark.needs("shell")
def test_cancel_while_the_shell_tool_runs_stops_the_tool_and_the_context_goes_on(
    agent: Agent, model: MockModel, leftovers: list[procfs.ProcessInfo]
) -> None:
    ctx = context()
    model.script([Shell(SLEEP)])
    task = agent.send("Run the long command.", ctx, returnImmediately=True)

    def sleeping() -> list[procfs.ProcessInfo] | None:
        found = [p for p in agent.processes() if cmdline(p.pid)[-2:] == ["sleep", "1000"]]
        return found or None

    tool = model.wait_until(sleeping, timeout=45)
    leftovers.extend(tool)
    canceled = agent.cancel(task["id"])

    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    await_gone([p.pid for p in tool])
    after = agent.send("Are you still there?", ctx)
    assert state(after) == COMPLETED, after
    assert wrapper(after)["sessionId"] == wrapper(canceled)["sessionId"]


@pytest.mark.needs("shell")
def test_a_shell_command_changes_the_disk_not_only_the_answer(
    agent: Agent, model: MockModel
) -> None:
    marker = write_marker(agent.places, outside=False)
    model.script([Shell(f"echo made-by-the-shell > {marker}")])

    task = agent.send("Write the marker file.", context())

    assert state(task) == COMPLETED, task
    # Codex under a bubblewrap without --argv0 used to complete the turn with every command
    # failing to start: only the file shows that the command ran.
    assert marker.read_text().strip() == "made-by-the-shell"


def test_an_upstream_error_fails_the_task_without_quoting_the_upstream_body(
    agent: Agent, model: MockModel
) -> None:
    # (A 401 asks for credentials: test_health.py.)
    for status in (400, 500):
        model.script([Upstream(status, f"upstream says: {SECRET}")])

        task = agent.send(f"This will fail with {status}.", context())

        assert state(task) == "TASK_STATE_FAILED", (status, task)
        assert status_text(task), "the caller is told why"
        assert SECRET not in json.dumps(task)
        assert "Traceback" not in json.dumps(task)
        if status == 500:
            assert wrapper(task)["error"]["kind"] == "upstream", wrapper(task)
    assert model.tool_requests(), "the agent called the model"
