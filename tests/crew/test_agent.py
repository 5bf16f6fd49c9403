"""The crew backend (examples/crew/agent.py) in the real daemon app: a crew as a step of
another crew, and a question asked two crews down answered from the top."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import anyio
from a2a.types import CancelTaskRequest, SendMessageRequest, TaskState

from examples.crew.agent import CrewAgent, CrewConfig
from examples.crew.show.events import NobodyAsker, PresetAnswers
from tests.crew.agents import CrewBackend
from tests.crew.conftest import RunCrew, StartAgent, plan_of
from tests.crew.test_alternates import closed_port
from tests.crew.test_serve import Seen, sdk, watch
from tests.interop.conftest import user_msg


@dataclass(frozen=True)
class Behind:
    specialist: CrewBackend
    url: str  # the specialist's
    crew: str  # the crew's


async def behind_a_crew(
    start_agent: StartAgent, tmp_path: Path, prompt: str, **step: object
) -> Behind:
    """A specialist, and a crew served as one agent whose one step `code` sends it `prompt`
    (more keys of the step in `step`)."""
    specialist = CrewBackend()
    url = await start_agent(specialist)
    plan = tmp_path / "inner.json"
    step = {"id": "code", "agent": "coder", "prompt": prompt, **step}
    doc = {"name": "inner", "agents": {"coder": {"card": url}}, "steps": [step]}
    plan.write_text(json.dumps(doc))
    config = CrewConfig(plan=plan, ledger=tmp_path / "inner.sqlite3")
    return Behind(specialist, url, await start_agent(CrewAgent(config), name="inner crew"))


async def test_a_crew_is_a_step_of_another_crew(
    start_agent: StartAgent, crew: RunCrew, tmp_path: Path
) -> None:
    behind = await behind_a_crew(start_agent, tmp_path, "say: {{input}}")
    specialist, inner = behind.specialist, behind.crew
    outer = plan_of({"team": inner}, [{"id": "delegate", "agent": "team", "prompt": "hello"}])
    result = await crew(outer)
    assert result.outcome.state == "done", result.report
    assert [t.text for t in specialist.turns] == ["say: hello"]
    assert "# Crew job `inner-" in result.report  # the inner crew's report is the step's output


async def test_a_question_two_crews_down_is_answered_from_the_top(
    start_agent: StartAgent, crew: RunCrew, tmp_path: Path
) -> None:
    behind = await behind_a_crew(start_agent, tmp_path, "ask: which name?")
    specialist, inner = behind.specialist, behind.crew
    outer = plan_of({"team": inner}, [{"id": "delegate", "agent": "team", "prompt": "go"}])
    first = await crew(outer)
    assert first.outcome.state == "needs-input"
    assert "step code (coder) asks: which name?" in first.report
    again = await crew(outer, None, asker=PresetAnswers({"delegate": "slugify"}, NobodyAsker()))
    assert again.outcome.state == "done", again.report
    assert specialist.turns[-1].text == "slugify"
    assert len({t.task_id for t in specialist.turns}) == 1  # the answer went to its task


async def test_canceling_the_crew_task_stops_the_job_not_the_specialists_task(
    start_agent: StartAgent, tmp_path: Path
) -> None:
    behind = await behind_a_crew(start_agent, tmp_path, "block")
    client, http = await sdk(behind.crew)
    seen = Seen()
    try:
        with anyio.fail_after(30):
            async with anyio.create_task_group() as tg:
                request = SendMessageRequest(message=user_msg("go"))
                tg.start_soon(watch, client.send_message(request), seen)
                await behind.specialist.started.wait()
                canceled = await client.cancel_task(CancelTaskRequest(id=seen.task_id))
            assert canceled.status.state == TaskState.TASK_STATE_CANCELED
            assert behind.specialist.interrupted == []  # its task goes on, for a resume
            behind.specialist.release()
            again = user_msg("go on", context_id=seen.context_id)
            resumed = await watch(client.send_message(SendMessageRequest(message=again)), Seen())
    finally:
        await http.aclose()
    assert resumed.state == TaskState.TASK_STATE_COMPLETED, resumed
    assert any(n.endswith(": resumed") for n in resumed.notes), resumed.notes
    assert len(behind.specialist.turns) == 1  # followed, not sent again


async def test_a_failed_step_says_which_agent_at_which_url_and_why(
    start_agent: StartAgent, tmp_path: Path
) -> None:
    """In the report, in the served crew's status messages and in its task's failure."""
    coder = await start_agent(CrewBackend())
    gone = closed_port()
    plan = tmp_path / "where.json"
    doc = {
        "name": "where",
        "agents": {"coder": {"card": coder}, "spare": {"card": gone}},
        "steps": [
            {"id": "code", "agent": "coder", "prompt": "fail: the build is broken"},
            {"id": "later", "agent": "coder", "dependsOn": ["code"], "prompt": "say: x"},
        ],
    }
    plan.write_text(json.dumps(doc))
    crew_url = await start_agent(
        CrewAgent(CrewConfig(plan=plan, ledger=tmp_path / "c.sqlite3")), name="where crew"
    )
    client, http = await sdk(crew_url)
    try:
        with anyio.fail_after(60):
            failed = await watch(
                client.send_message(SendMessageRequest(message=user_msg("go"))), Seen()
            )
    finally:
        await http.aclose()
    where = f"coder at {coder}/.well-known/agent-card.json: failed: the build is broken"
    assert failed.state == TaskState.TASK_STATE_FAILED
    assert where in failed.final_text, failed.final_text
    notes = "\n".join(failed.notes)
    assert any(n.startswith("step code (coder): failed") and where in n for n in failed.notes), (
        notes
    )
    report = str(failed.artifacts["report"][0]["text"])
    assert f"**code** (coder): failed: {where}" in report

    doc["steps"] = [{"id": "code", "agent": "spare", "prompt": "say: x"}]
    plan.write_text(json.dumps(doc))
    unusable = await start_agent(
        CrewAgent(CrewConfig(plan=plan, ledger=tmp_path / "d.sqlite3")), name="unusable crew"
    )
    client, http = await sdk(unusable)
    try:
        with anyio.fail_after(60):
            down = await watch(
                client.send_message(SendMessageRequest(message=user_msg("go"))), Seen()
            )
    finally:
        await http.aclose()
    assert down.state == TaskState.TASK_STATE_FAILED
    assert f"agent 'spare' ({gone}/.well-known/agent-card.json): card unreachable" in (
        down.final_text
    ), down.final_text
