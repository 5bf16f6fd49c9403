"""The crew against real daemons (scripted backends): the acceptance items of issue 9 that run
in one event loop. The orchestrator-kill item is in test_cli.py (a real process)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import cast

import pytest

from examples.crew.agents.client import AgentError, AgentLink
from examples.crew.ledger.ledger import Ledger
from examples.crew.plan.plan import AgentSpec
from examples.crew.run.job import JobError
from examples.crew.show.events import PresetAnswers, Question
from tests.crew import remote
from tests.crew.agents import CrewBackend, Rendezvous
from tests.crew.conftest import RunCrew, StartAgent, V03OnlyProxy, plan_of
from tests.support.scripted import ScriptedBackend

VERDICT = {
    "type": "object",
    "required": ["verdict", "notes"],
    "properties": {"verdict": {"enum": ["approve", "changes"]}, "notes": {"type": "string"}},
}


class RecordingAsker:
    def __init__(self, answer: str | None) -> None:
        self.answer = answer
        self.questions: list[Question] = []

    async def ask(self, question: Question) -> str | None:
        self.questions.append(question)
        return self.answer


# ----- parallel layers -------------------------------------------------------------------------


async def test_a_layer_runs_its_steps_at_the_same_time(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    meeting = Rendezvous()
    left, right = CrewBackend(rendezvous=meeting), CrewBackend(rendezvous=meeting)
    merger = CrewBackend()
    plan = plan_of(
        {
            "left": await start_agent(left),
            "right": await start_agent(right),
            "merger": await start_agent(merger),
        },
        [
            {"id": "a", "agent": "left", "prompt": "meet: 2"},
            {"id": "b", "agent": "right", "prompt": "meet: 2"},
            {
                "id": "merge",
                "agent": "merger",
                "dependsOn": ["a", "b"],
                "prompt": "say: merged\n{{steps.a}}\n{{steps.b}}",
            },
        ],
    )
    assert plan.layers == [["a", "b"], ["merge"]]
    result = await crew(plan)
    assert result.outcome.state == "done"
    [a], [b], [merge] = left.intervals, right.intervals, merger.intervals
    assert a.end is not None and b.end is not None
    # Both steps of the layer were inside their agents at once (each saw the other arrive):
    # the layer took as long as its slowest step, not the sum of both.
    assert max(a.start, b.start) < min(a.end, b.end)
    assert merge.start >= max(a.end, b.end)
    assert "met" in merger.turns[0].text
    assert "alone" not in merger.turns[0].text


# ----- deadlines -------------------------------------------------------------------------------


async def test_past_its_deadline_a_step_is_canceled_on_the_agent_and_continue_applies(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    slow, other = CrewBackend(), CrewBackend()
    slow_url = await start_agent(slow)
    plan = plan_of(
        {"slow": slow_url, "other": await start_agent(other)},
        [
            {
                "id": "stuck",
                "agent": "slow",
                "prompt": "block",
                "deadline": "300ms",
                "onFailure": "continue",
            },
            {"id": "after", "agent": "other", "dependsOn": ["stuck"], "prompt": "say: x"},
            {"id": "side", "agent": "other", "prompt": "say: independent"},
        ],
    )
    result = await crew(plan)
    assert result.outcome.state == "partial"
    assert result.outcome.steps == {"stuck": "failed", "after": "skipped", "side": "done"}
    [run] = await ledger.runs("job-1", "stuck")
    assert run.state == "timeout"
    assert run.task_id is not None
    assert (await remote.task(slow_url, run.task_id))["status"]["state"] == "TASK_STATE_CANCELED"
    assert slow.interrupted == [run.task_id]
    assert [t.text for t in other.turns] == ["say: independent"]
    assert "past its deadline (0.3 s)" in result.report
    assert "not run: stuck failed" in result.report


async def test_a_deadline_with_abort_cancels_the_other_running_steps(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    slow, busy = CrewBackend(), CrewBackend()
    busy_url = await start_agent(busy)
    plan = plan_of(
        {"slow": await start_agent(slow), "busy": busy_url},
        [
            {"id": "stuck", "agent": "slow", "prompt": "block", "deadline": "2s"},
            {"id": "sibling", "agent": "busy", "prompt": "block"},
            {"id": "later", "agent": "busy", "dependsOn": ["sibling"], "prompt": "say: x"},
        ],
    )
    result = await crew(plan)
    assert result.outcome.state == "failed"
    assert result.outcome.steps == {"stuck": "failed", "sibling": "canceled", "later": "skipped"}
    [sibling] = await ledger.runs("job-1", "sibling")
    assert sibling.state == "canceled"
    assert sibling.task_id is not None
    remote_sibling = await remote.task(busy_url, sibling.task_id)
    assert remote_sibling["status"]["state"] == "TASK_STATE_CANCELED"
    assert busy.interrupted == [sibling.task_id]


async def test_the_job_deadline_caps_every_step(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    slow = CrewBackend()
    plan = plan_of(
        {"slow": await start_agent(slow)},
        [{"id": "stuck", "agent": "slow", "prompt": "block", "deadline": "1h", "retries": 3}],
        deadline="300ms",
    )
    result = await crew(plan)
    assert result.outcome.steps == {"stuck": "failed"}
    [run] = await ledger.runs("job-1", "stuck")  # no retry once the job's time is up
    assert run.state == "timeout"
    assert "past the job's deadline" in (run.detail or "")


# ----- input-required --------------------------------------------------------------------------


async def test_input_required_is_surfaced_with_the_question_and_answered_on_a_rerun(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    agent = CrewBackend()
    url = await start_agent(agent)
    plan = plan_of(
        {"writer": url},
        [
            {"id": "q", "agent": "writer", "prompt": "ask: Which license, MIT or Apache-2.0?"},
            {"id": "then", "agent": "writer", "dependsOn": ["q"], "prompt": "say: ok"},
        ],
    )
    first = await crew(plan)
    assert first.outcome.state == "needs-input"
    assert first.outcome.steps == {"q": "needs-input", "then": "needs-input"}
    assert "Which license, MIT or Apache-2.0?" in first.outcome.details["q"]
    assert "## Waiting for your answer" in first.report
    assert "Which license, MIT or Apache-2.0?" in first.report
    [run] = await ledger.runs("job-1", "q")
    assert run.task_id is not None
    pending = await remote.task(url, run.task_id)
    assert pending["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"  # left open, not answered

    asker = RecordingAsker(None)
    second = await crew(plan, None, asker=PresetAnswers({"q": "MIT"}, asker))
    assert second.outcome.state == "done"
    assert asker.questions == []
    [answered] = await ledger.runs("job-1", "q")
    assert answered.task_id == run.task_id  # the same task continued
    assert answered.output_text == "answered: MIT"
    assert len(await remote.tasks(url)) == 2  # q and then: nothing was sent twice


async def test_an_interactive_person_gets_the_agents_question(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    agent = CrewBackend()
    plan = plan_of(
        {"writer": await start_agent(agent)},
        [{"id": "q", "agent": "writer", "prompt": "ask: Tabs or spaces?"}],
    )
    asker = RecordingAsker("spaces")
    result = await crew(plan, asker=asker)
    assert result.outcome.state == "done"
    [question] = asker.questions
    assert (question.step, question.agent, question.text) == ("q", "writer", "Tabs or spaces?")
    assert question.kind == "input-required"
    assert agent.turns[-1].text == "spaces"


async def test_an_agents_approval_request_is_escalated_to_the_person(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    # The scripted backend asks permission the way the real ones do in approvals.mode ask.
    agent = ScriptedBackend()
    plan = plan_of(
        {"builder": await start_agent(cast("CrewBackend", agent), approvals={"mode": "ask"})},
        [{"id": "build", "agent": "builder", "prompt": "approve: make"}],
    )
    asker = RecordingAsker("approve")
    result = await crew(plan, asker=asker)
    assert result.outcome.state == "done"
    [question] = asker.questions
    assert question.kind == "input-required"
    assert "Approval needed: Run `make` in the working directory" in question.text
    assert [a.decision for a in agent.answers] == ["approve"]
    assert len(agent.turns) == 1  # the answer continued the paused turn


# ----- schemas ---------------------------------------------------------------------------------


async def test_a_schema_invalid_artifact_fails_its_step(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    reviewer, later = CrewBackend(), CrewBackend()
    plan = plan_of(
        {"reviewer": await start_agent(reviewer), "later": await start_agent(later)},
        [
            {
                "id": "review",
                "agent": "reviewer",
                "prompt": 'json: {"verdict": "maybe", "notes": "hmm"}',
                "schema": VERDICT,
            },
            {"id": "use", "agent": "later", "dependsOn": ["review"], "prompt": "{{steps.review}}"},
        ],
    )
    result = await crew(plan)
    assert result.outcome.state == "failed"
    assert result.outcome.steps == {"review": "failed", "use": "skipped"}
    [run] = await ledger.runs("job-1", "review")
    assert run.state == "invalid"
    assert "does not match the step's schema at verdict" in (run.detail or "")
    assert later.turns == []  # nothing downstream read the invalid artifact


async def test_a_retry_after_an_invalid_artifact_tells_the_agent_why(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    agent = CrewBackend()
    plan = plan_of(
        {"reviewer": await start_agent(agent)},
        [
            {
                "id": "review",
                "agent": "reviewer",
                "prompt": 'strict: {"verdict": "approve", "notes": "fine"}',
                "schema": VERDICT,
                "retries": 1,
                "retryDelay": 0,
            }
        ],
    )
    result = await crew(plan)
    assert result.outcome.state == "done"
    first, second = await ledger.runs("job-1", "review")
    assert (first.state, second.state) == ("invalid", "done")
    assert "is not JSON" in agent.turns[1].text
    assert second.output_data == {"verdict": "approve", "notes": "fine"}


async def test_a_data_part_is_the_steps_json(start_agent: StartAgent, crew: RunCrew) -> None:
    agent = CrewBackend()
    plan = plan_of(
        {"a": await start_agent(agent)},
        [
            {
                "id": "d",
                "agent": "a",
                "prompt": 'data: {"verdict": "approve", "notes": "x"}',
                "schema": VERDICT,
            },
            {"id": "use", "agent": "a", "dependsOn": ["d"], "prompt": "{{steps.d.data.verdict}}"},
        ],
    )
    result = await crew(plan)
    assert result.outcome.state == "done"
    assert 'output of step "d"' in agent.turns[-1].text
    assert "\napprove\n" in agent.turns[-1].text


# ----- loops -----------------------------------------------------------------------------------


def review_loop(verdicts: str, rounds: int = 3) -> list[dict[str, object]]:
    return [
        {"id": "write", "agent": "writer", "prompt": "say: draft 1 of {{input}}"},
        {
            "id": "review",
            "agent": "reviewer",
            "dependsOn": ["write"],
            "prompt": f"verdicts: {verdicts}\n{{{{steps.write}}}}",
            "schema": VERDICT,
        },
        {
            "id": "revise",
            "agent": "writer",
            "dependsOn": ["review"],
            "prompt": "say: draft {{round}} (revised)\n{{steps.review.data.notes}}",
            "repeatUntil": {"step": "review", "field": "verdict", "equals": "approve"},
            "maxRounds": rounds,
            "revises": "write",
            "onFailure": "continue",
        },
        {"id": "publish", "agent": "writer", "dependsOn": ["write"], "prompt": "{{steps.write}}"},
    ]


async def test_a_revise_loop_runs_until_the_reviewer_approves(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    writer, reviewer = CrewBackend(), CrewBackend()
    writer_url = await start_agent(writer)
    plan = plan_of(
        {"writer": writer_url, "reviewer": await start_agent(reviewer)},
        review_loop("changes,approve"),
    )
    result = await crew(plan)
    assert result.outcome.state == "done"
    reviews = await ledger.runs("job-1", "review")
    assert [(r.round, r.output_data["verdict"]) for r in reviews] == [
        (1, "changes"),
        (2, "approve"),
    ]
    [write] = await ledger.runs("job-1", "write")
    [revise] = await ledger.runs("job-1", "revise")
    # The re-review read the revision, and so did the step after the loop.
    assert "draft 1 (revised)" in reviewer.turns[1].text
    assert "draft 1 (revised)" in writer.turns[-1].text
    assert "round 1: add tests" in writer.turns[1].text
    # One context for the whole job: the revise turn continued the writer's own session.
    assert len(writer.sessions) == 1
    assert writer.turns[1].session_id == next(iter(writer.sessions))
    assert {r.context_id for r in await ledger.runs("job-1")} == {revise.context_id}
    assert revise.task_id is not None
    stored = await remote.task(writer_url, revise.task_id)
    assert stored["history"][0]["referenceTaskIds"] == [write.task_id]
    assert stored["history"][0]["messageId"] == "job-1:revise:1"


async def test_a_loop_that_never_converges_stops_at_max_rounds(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    writer, reviewer = CrewBackend(), CrewBackend()
    plan = plan_of(
        {"writer": await start_agent(writer), "reviewer": await start_agent(reviewer)},
        review_loop("changes", rounds=2),
    )
    result = await crew(plan)
    assert result.outcome.state == "partial"
    assert result.outcome.steps["revise"] == "failed"
    assert result.outcome.steps["publish"] == "skipped"
    assert "still says verdict='changes' after 2 rounds" in result.outcome.details["revise"]
    assert len(await ledger.runs("job-1", "review")) == 3


# ----- versions --------------------------------------------------------------------------------


StartV03 = Callable[[str], Awaitable[V03OnlyProxy]]


async def test_a_v03_only_agent_works_in_the_same_crew(
    start_agent: StartAgent, start_v03_only: StartV03, crew: RunCrew, ledger: Ledger
) -> None:
    writer, reviewer = CrewBackend({"name": "v1-writer"}), CrewBackend({"name": "v03-reviewer"})
    legacy = await start_v03_only(await start_agent(reviewer))
    plan = plan_of(
        {"writer": await start_agent(writer), "reviewer": legacy.url},
        review_loop("changes,approve"),
    )
    result = await crew(plan)
    assert result.outcome.state == "done"
    assert legacy.refused == []
    assert set(legacy.methods) <= {"message/stream", "tasks/get", "tasks/resubscribe"}
    assert legacy.methods.count("message/stream") == 2  # review, then the re-review
    assert all(v is None or v.startswith("0.") for v in legacy.versions)
    assert "| reviewer | " in result.report
    assert "| 0.3 | v0.3 JSONRPC, stream |" in result.report
    assert "| 1.0, 0.3 | v1.0 JSONRPC, stream |" in result.report
    verdicts = [r.output_data["verdict"] for r in await ledger.runs("job-1", "review")]
    assert verdicts == ["changes", "approve"]


async def test_a_v03_only_agent_is_canceled_past_its_deadline(
    start_agent: StartAgent, start_v03_only: StartV03, crew: RunCrew, ledger: Ledger
) -> None:
    agent = CrewBackend()
    legacy = await start_v03_only(await start_agent(agent))
    plan = plan_of(
        {"old": legacy.url},
        [{"id": "stuck", "agent": "old", "prompt": "block", "deadline": "300ms"}],
    )
    result = await crew(plan)
    assert result.outcome.steps == {"stuck": "failed"}
    assert "tasks/cancel" in legacy.methods
    assert legacy.refused == []
    [run] = await ledger.runs("job-1", "stuck")
    assert agent.interrupted == [run.task_id]


async def test_a_token_from_the_environment_goes_to_the_agent_as_a_bearer(
    start_agent: StartAgent, start_v03_only: StartV03
) -> None:
    front = await start_v03_only(await start_agent(CrewBackend()))
    spec = AgentSpec(card=front.url, token_env="AGENT_TOKEN")
    with pytest.raises(AgentError, match="AGENT_TOKEN is unset"):
        await AgentLink.connect("a", spec, {})
    link = await AgentLink.connect("a", spec, {"AGENT_TOKEN": "s3cret"})
    try:
        updates = [u async for u in link.send("say: hi", message_id="m-1", context_id="c-1")]
    finally:
        await link.aclose()
    assert updates[-1].state == "completed"
    assert front.authorizations == ["Bearer s3cret"] * len(front.authorizations)
    assert len(front.authorizations) >= 2  # the card, then the call


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON"])
async def test_polling_instead_of_streaming(
    start_agent: StartAgent, crew: RunCrew, binding: str
) -> None:
    agent = CrewBackend()
    url = await start_agent(agent)
    plan = plan_of({"a": url}, [{"id": "s", "agent": "a", "prompt": "say: polled"}])
    doc = plan.model_dump(by_alias=True, exclude_none=True)
    doc["agents"]["a"].update(follow="poll", binding=binding, pollInterval=20)
    result = await crew(type(plan).model_validate(doc))
    assert result.outcome.state == "done"
    assert f"v1.0 {binding}, poll" in result.report


# ----- resuming --------------------------------------------------------------------------------


async def test_a_finished_job_is_not_redone(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    agent = CrewBackend()
    plan = plan_of(
        {"a": await start_agent(agent)},
        [
            {"id": "one", "agent": "a", "prompt": "say: 1"},
            {"id": "two", "agent": "a", "dependsOn": ["one"], "prompt": "say: 2 {{steps.one}}"},
        ],
    )
    assert (await crew(plan)).outcome.state == "done"
    again = await crew(plan, None)
    assert again.outcome.state == "done"
    assert len(agent.turns) == 2
    assert "| one | a | crew-scripted | done | 1 | 1 |" in again.report


async def test_a_message_whose_task_id_was_lost_is_found_not_resent(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    """The crash window between 'the agent created the task' and 'the ledger has its id'."""
    agent = CrewBackend()
    url = await start_agent(agent)
    plan = plan_of({"a": url}, [{"id": "one", "agent": "a", "prompt": "say: once"}])
    from examples.crew.run.job import open_job  # noqa: PLC0415 - the test plays the crashed run

    job = await open_job(ledger, plan, "job-1", "the input")
    run = await ledger.new_run("job-1", "one", round_=1, agent="a", context_id=job.context_id)
    sent = await remote.send(url, "say: once", message_id=run.message_id, context_id=job.context_id)
    result = await crew(plan, None)
    assert result.outcome.state == "done"
    [found] = await ledger.runs("job-1", "one")
    assert found.task_id == sent["id"]
    assert len(agent.turns) == 1
    assert len(await remote.tasks(url, job.context_id)) == 1


async def test_a_job_never_changes_its_plan_or_input(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    url = await start_agent(CrewBackend())
    plan = plan_of({"a": url}, [{"id": "one", "agent": "a", "prompt": "say: 1"}])
    await crew(plan)
    other = plan_of({"a": url}, [{"id": "one", "agent": "a", "prompt": "say: 2"}])
    with pytest.raises(JobError, match="another plan"):
        await crew(other, None)
    with pytest.raises(JobError, match="another input"):
        await crew(plan, "something else")


async def test_every_job_has_its_own_context_and_step_scope_splits_it(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    url = await start_agent(CrewBackend())
    steps = [
        {"id": "one", "agent": "a", "prompt": "say: 1"},
        {"id": "two", "agent": "a", "prompt": "say: 2"},
    ]
    await crew(plan_of({"a": url}, steps), job_id="j1")
    await crew(plan_of({"a": url}, steps), job_id="j2")
    await crew(plan_of({"a": url}, steps, contextScope="step"), job_id="j3")
    contexts = {j: {r.context_id for r in await ledger.runs(j)} for j in ("j1", "j2", "j3")}
    assert len(contexts["j1"]) == len(contexts["j2"]) == 1
    assert contexts["j1"] != contexts["j2"]
    assert len(contexts["j3"]) == 2


async def test_an_unreachable_agent_stops_the_job_before_anything_is_sent(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    agent = CrewBackend()
    plan = plan_of(
        {"a": await start_agent(agent), "gone": "http://127.0.0.1:9"},
        [
            {"id": "one", "agent": "a", "prompt": "say: 1"},
            {"id": "two", "agent": "gone", "prompt": "say: 2"},
        ],
    )
    with pytest.raises(JobError, match=r"'gone'.*unreachable"):
        await crew(plan)
    assert agent.turns == []
