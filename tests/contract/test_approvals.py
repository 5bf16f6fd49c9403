"""Every backend under `approvals.mode: ask`: a shell command its own policy does not decide
becomes an input-required question to the caller, and the answer (approve, deny with a message,
approve always), its absence (approvals.timeout with onTimeout deny or fail) or a cancel decides
what the agent sees. Three daemons per backend (one per approvals block) serve the module."""

from __future__ import annotations

from typing import Any

import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Shell
from tests.contract.agent import (
    Agent,
    Task,
    context,
    state,
    status_text,
    wrapper,
    write_marker,
)
from tests.contract.conftest import Serve
from tests.contract.targets import ESCALATION, BackendTarget

COMPLETED = "TASK_STATE_COMPLETED"
INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
ASK = {"mode": "ask"}
QUESTION = "a2a-wrapper/approval-request"

pytestmark = pytest.mark.needs("approvals", "shell")


def _serve(target: BackendTarget, serve: Serve, **approvals: Any) -> Agent:
    return serve(block=target.asks, approvals={**ASK, **approvals})


@pytest.fixture(scope="module")
def asking(target: BackendTarget, serve: Serve) -> Agent:
    return _serve(target, serve)


@pytest.fixture(scope="module")
def denying_late(target: BackendTarget, serve: Serve) -> Agent:
    return _serve(target, serve, timeout=300)


@pytest.fixture(scope="module")
def failing_late(target: BackendTarget, serve: Serve) -> Agent:
    return _serve(target, serve, timeout=300, onTimeout="fail")


class Asked:
    """One case's command: where it writes its marker, and the turn that asks to run it."""

    def __init__(self, agent: Agent, model: MockModel) -> None:
        self.agent, self.model = agent, model
        self.marker = write_marker(agent.places, agent.target.marker_outside)
        self.command = agent.target.approval_command(self.marker)

    def ask(self, ctx: str, **configuration: Any) -> Task:
        """A turn whose model runs the command; the task as SendMessage returns it."""
        self.model.script([Shell(self.command, escalate=ESCALATION)])
        return self.agent.send("Please run the command.", ctx, **configuration)

    def later_requests_say(self, text: str) -> bool:
        """Whether a model request after the question carries `text` (as a tool result or a
        user message: backends differ in where they put the caller's words)."""
        return any(text in r.dump() for r in self.model.tool_requests()[1:])

    @property
    def ran(self) -> bool:
        return self.marker.exists()


def question(task: Task) -> dict[str, Any]:
    data: dict[str, Any] = task["status"]["message"]["parts"][1]["data"]
    return data


def decisions(task: Task) -> list[tuple[str, str]]:
    return [(d["decision"], d["by"]) for d in wrapper(task).get("approvals", [])]


def test_the_command_becomes_an_input_required_question_with_the_request(
    asking: Agent, model: MockModel
) -> None:
    case = Asked(asking, model)

    task = case.ask(context())

    assert state(task) == INPUT_REQUIRED, task
    text, data = task["status"]["message"]["parts"]
    asked = data["data"]
    assert asked["type"] == QUESTION
    assert asked["kind"] == "command"
    assert asked["tool"] == asking.target.shell_tool
    assert asked["options"] == ["approve", "approve_always", "deny"]
    assert asked["summary"] in text["text"]
    asking.target.check_question(asked, case.command, asking.places)
    assert not case.ran, "the turn waits before the tool"
    assert len(model.tool_requests()) == 1
    asking.cancel(task["id"])


def test_approve_runs_the_tool_and_the_turn_completes(asking: Agent, model: MockModel) -> None:
    case = Asked(asking, model)
    asked = case.ask(context())

    done = asking.reply(asked, {"text": "approve"})

    assert done["id"] == asked["id"]
    assert state(done) == COMPLETED, done
    assert case.ran, [r.dump()[-1500:] for r in model.tool_requests()]
    assert case.later_requests_say("ran-it")
    assert decisions(done) == [("approve", "caller")]
    assert wrapper(done)["approvals"][0]["tool"] == asking.target.shell_tool


def test_deny_makes_the_agent_see_the_denial_with_the_callers_message(
    asking: Agent, model: MockModel
) -> None:
    case = Asked(asking, model)
    asked = case.ask(context())

    done = asking.reply(asked, {"data": {"decision": "deny", "message": "Not on Fridays."}})

    assert state(done) == COMPLETED, done
    assert case.later_requests_say("Not on Fridays.")
    assert not case.ran
    assert decisions(done) == [("deny", "caller")]


def test_cancel_while_the_question_waits_stops_the_turn_and_the_context_goes_on(
    asking: Agent, model: MockModel
) -> None:
    case = Asked(asking, model)
    ctx = context()
    asked = case.ask(ctx)
    assert state(asked) == INPUT_REQUIRED, asked
    agents = asking.agent_pids()

    canceled = asking.cancel(asked["id"])

    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    after = asking.send("Are you still there?", ctx)
    assert state(after) == COMPLETED, after
    assert wrapper(after)["sessionId"] == wrapper(asked)["sessionId"]
    assert not case.ran
    assert asking.agent_pids() == agents, "the agent stopped the turn and was not replaced"
    assert "Are you still there?" in model.tool_requests()[-1].dump()


def test_an_unanswered_question_is_denied_after_the_timeout_and_the_turn_goes_on(
    denying_late: Agent, model: MockModel
) -> None:
    case = Asked(denying_late, model)
    asked = case.ask(context(), returnImmediately=True)

    done = denying_late.until_done(asked["id"])

    assert state(done) == COMPLETED, done
    assert decisions(done) == [("deny", "timeout")]
    assert case.later_requests_say("No answer came within approvals.timeout")
    assert not case.ran


def test_on_timeout_fail_fails_the_task_and_the_context_goes_on(
    failing_late: Agent, model: MockModel
) -> None:
    case = Asked(failing_late, model)
    ctx = context()
    asked = case.ask(ctx, returnImmediately=True)

    done = failing_late.until_done(asked["id"])

    assert state(done) == "TASK_STATE_FAILED", done
    assert "approvals.timeout" in status_text(done)
    assert not case.ran
    agents = failing_late.agent_pids()
    after = failing_late.send("Are you still there?", ctx)
    assert state(after) == COMPLETED, after
    assert wrapper(after)["sessionId"] == wrapper(done)["sessionId"]
    assert not case.ran
    assert failing_late.agent_pids() == agents, "the turn was stopped, the agent not replaced"


def test_approve_always_is_not_asked_again_in_the_session(asking: Agent, model: MockModel) -> None:
    case = Asked(asking, model)
    ctx = context()
    first = asking.reply(case.ask(ctx), {"text": "approve always"})
    assert state(first) == COMPLETED, first
    case.marker.unlink()

    again = case.ask(ctx)

    assert state(again) == COMPLETED, "no second question"
    assert wrapper(again)["sessionId"] == wrapper(first)["sessionId"]
    assert "approvals" not in wrapper(again)
    assert case.ran
