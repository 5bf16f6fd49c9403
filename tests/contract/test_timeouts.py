"""Every backend: a turn whose model hangs ends FAILED with the deadline named, when
`timeouts.turn` or `timeouts.idle` runs out, and the agent lets go of the hung model request.
One daemon per backend and deadline."""

from __future__ import annotations

import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Hang, Say
from tests.contract.agent import Agent, context, state, status_text
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget

FAILED = "TASK_STATE_FAILED"


@pytest.fixture(scope="module")
def turn_bounded(serve: Serve) -> Agent:
    # Long enough for a cold agent start on a loaded machine to reach the model.
    return serve(timeouts={"turn": 4000, "idle": 0})


@pytest.fixture(scope="module")
def idle_bounded(serve: Serve) -> Agent:
    # Long enough for a warm agent on a loaded machine to reach the model (CI once saw
    # OpenCode stay silent 3 s between the prompt and its model request).
    return serve(timeouts={"idle": 6000})


def test_a_turn_past_timeouts_turn_fails_with_the_reason_and_the_agent_lets_go(
    turn_bounded: Agent, model: MockModel
) -> None:
    model.script([Hang()])

    task = turn_bounded.send("Think forever.", context())

    assert state(task) == FAILED, task
    assert "timeouts.turn (4 s)" in status_text(task)
    hung = model.wait_for_request(lambda r: r.offers_tools)
    model.wait_until(lambda: hung.went_away or None, timeout=10)


def test_a_silent_agent_past_timeouts_idle_fails_with_the_reason_and_the_context_goes_on(
    idle_bounded: Agent, model: MockModel, target: BackendTarget
) -> None:
    ctx = context()
    model.script([Say("Warm.")], [Hang()])
    # A first turn starts the agent, so the idle clock of the next measures the hang alone.
    assert state(idle_bounded.send("Warm up.", ctx)) == "TASK_STATE_COMPLETED"
    agents = idle_bounded.agent_pids()

    task = idle_bounded.send("Wait for a model that never answers.", ctx)

    assert state(task) == FAILED, task
    assert "timeouts.idle (6 s)" in status_text(task)
    hung = model.wait_for_request(lambda r: "never answers" in r.last_user_text)
    model.wait_until(lambda: hung.went_away or None, timeout=10)
    after = idle_bounded.send("Better now?", ctx)
    assert state(after) == "TASK_STATE_COMPLETED", (target.name, after)
    assert idle_bounded.agent_pids() == agents, "the agent stopped the turn, was not replaced"
