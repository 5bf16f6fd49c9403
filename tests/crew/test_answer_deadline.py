"""`steps[].answerDeadline`: an agent's question that nobody answers expires; its remote task
is canceled on the agent and the step's `onFailure` decides. In a terminal run, in a later
re-run of the job (the question's age is in the ledger), and in `crew serve`, where it expires
with nobody writing at all."""

from __future__ import annotations

from pathlib import Path

import anyio
from a2a.types import GetTaskRequest, SendMessageRequest, TaskState

from examples.crew.ledger.ledger import Ledger
from examples.crew.show.events import Question
from tests.crew.agents import CrewBackend
from tests.crew.conftest import RunCrew, StartAgent, plan_of
from tests.crew.test_agent import behind_a_crew
from tests.crew.test_serve import Seen, sdk, watch
from tests.interop.conftest import user_msg


class SilentAsker:
    """A person at the terminal who never answers; `asked` fires when the question is put."""

    def __init__(self) -> None:
        self.asked = anyio.Event()

    async def ask(self, question: Question) -> str | None:
        self.asked.set()
        await anyio.sleep_forever()
        return None


async def remote_state(url: str, task_id: str) -> int:
    client, http = await sdk(url)
    try:
        return (await client.get_task(GetTaskRequest(id=task_id))).status.state
    finally:
        await http.aclose()


async def test_an_unanswered_question_expires_and_on_failure_continue_goes_on(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    url = await start_agent(CrewBackend())
    plan = plan_of(
        {"a": url},
        [
            {
                "id": "ask",
                "agent": "a",
                "prompt": "ask: which name?",
                "answerDeadline": "300ms",
                "onFailure": "continue",
            },
            {"id": "other", "agent": "a", "prompt": "say: still here"},
        ],
    )
    asker = SilentAsker()
    with anyio.fail_after(30):
        result = await crew(plan, asker=asker)
    assert asker.asked.is_set()
    assert result.outcome.state == "partial", result.report
    assert result.outcome.steps == {"ask": "failed", "other": "done"}
    assert "unanswered for 0.3 s (answerDeadline)" in result.outcome.details["ask"]
    [run] = await ledger.runs("job-1", "ask")
    assert run.state == "expired"
    assert run.task_id is not None
    assert await remote_state(url, run.task_id) == TaskState.TASK_STATE_CANCELED


async def test_the_question_expires_on_a_re_run_past_its_deadline(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    url = await start_agent(CrewBackend())
    step = {"id": "ask", "agent": "a", "prompt": "ask: which name?", "answerDeadline": "200ms"}
    plan = plan_of({"a": url}, [step])
    first = await crew(plan)
    assert first.outcome.state == "needs-input"
    [run] = await ledger.runs("job-1", "ask")
    assert run.asked_at is not None
    await anyio.sleep(0.25)  # let the deadline pass: nobody answers meanwhile
    again = await crew(plan, None)
    assert again.outcome.state == "failed", again.report
    assert "answerDeadline" in again.outcome.details["ask"]
    assert run.task_id is not None
    assert await remote_state(url, run.task_id) == TaskState.TASK_STATE_CANCELED
    assert [r.state for r in await ledger.runs("job-1", "ask")] == ["expired"]  # nothing resent


async def test_a_served_crew_expires_a_question_with_nobody_writing(
    start_agent: StartAgent, tmp_path: Path
) -> None:
    behind = await behind_a_crew(start_agent, tmp_path, "ask: which name?", answerDeadline="300ms")
    client, http = await sdk(behind.crew)
    try:
        asked = await watch(client.send_message(SendMessageRequest(message=user_msg("go"))), Seen())
        assert asked.state == TaskState.TASK_STATE_INPUT_REQUIRED
        [turn] = behind.specialist.turns
        with anyio.fail_after(30):  # nobody writes: the crew cancels the specialist's task
            while True:
                if await remote_state(behind.url, turn.task_id) == TaskState.TASK_STATE_CANCELED:
                    break
                await anyio.sleep(0.05)
        late = user_msg("too late", asked.task_id, asked.context_id)
        end = await watch(client.send_message(SendMessageRequest(message=late)), Seen())
    finally:
        await http.aclose()
    assert end.state == TaskState.TASK_STATE_FAILED, end
    [report] = end.artifacts["report"]
    assert "answerDeadline" in str(report["text"])
    assert len(behind.specialist.turns) == 1  # the late answer went nowhere
