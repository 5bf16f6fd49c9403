"""Push where offered: the crew follows a push-capable agent's tasks through its own loopback
webhook (one GetTask per task, to confirm), and polls the others; the receiver refuses a
notification without the job's token."""

from __future__ import annotations

import re

import anyio
import httpx

from examples.crew.events import NobodyAsker, PresetAnswers
from examples.crew.job import JobResult
from examples.crew.plan import parse_plan
from examples.crew.push import TOKEN_HEADER, PushReceiver
from tests.crew.agents import CrewBackend
from tests.crew.conftest import RunCrew, StartAgent

PUSH = {"enabled": True, "allowPrivateTargets": True, "backoff": 1}


def waiting_row(report: str, agent: str) -> tuple[str, int]:
    """(mode, GetTask calls) of an agent in the report's "Waiting on agents" table."""
    section = report.partition("## Waiting on agents")[2]
    found = re.search(rf"^\| {agent} \| (\w+) \| (\d+) \|", section, re.M)
    assert found is not None, report
    return found.group(1), int(found.group(2))


async def test_a_push_capable_agent_costs_one_get_task_per_task_polling_costs_more(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    pushed, polled = CrewBackend(), CrewBackend()
    agents = {
        "pushed": {"card": await start_agent(pushed, push=PUSH), "pollInterval": 20},
        "polled": {"card": await start_agent(polled), "pollInterval": 20, "follow": "poll"},
    }
    steps = [
        {"id": "slow", "agent": "pushed", "prompt": "block"},
        {"id": "ask", "agent": "pushed", "prompt": "ask: which name?"},
        {"id": "polled", "agent": "polled", "prompt": "block"},
    ]
    plan = parse_plan({"agents": agents, "steps": steps}, {})
    result: list[JobResult] = []

    async def run() -> None:
        asker = PresetAnswers({"ask": "slugify"}, NobodyAsker())
        result.append(await crew(plan, asker=asker))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run)
            await pushed.started.wait()
            await polled.started.wait()
            await anyio.sleep(0.3)  # both tasks held: the polled one is polled meanwhile
            pushed.release()
            polled.release()
    [done] = result
    report = done.report
    assert done.outcome.state == "done", report
    # Two tasks by push: one GetTask each to confirm its end, and one more to read the
    # question the second one asked (its input-required is a settling point too).
    assert waiting_row(report, "pushed") == ("push", 3)
    mode, polls = waiting_row(report, "polled")
    assert mode == "poll" and polls > 2, report
    saved = re.search(r"Push saved ~(\d+) requests: \d+ notifications received, 0 refused", report)
    assert saved is not None and int(saved.group(1)) > 0, report


async def test_the_webhook_refuses_a_notification_without_the_jobs_token() -> None:
    receiver = PushReceiver("job-7")
    body = {"statusUpdate": {"taskId": "t1", "status": {"state": "TASK_STATE_COMPLETED"}}}
    async with receiver.running(), httpx.AsyncClient() as http:
        url = receiver.webhook()
        wrong = await http.post(url, json=body, headers={TOKEN_HEADER: "guess"})
        other = await http.post(
            url.replace("job-7", "job-8"), json=body, headers={TOKEN_HEADER: receiver.token}
        )
        assert (wrong.status_code, other.status_code) == (401, 404)
        assert not await receiver.wait("t1", 0)
        right = await http.post(url, json=body, headers={TOKEN_HEADER: receiver.token})
        assert right.status_code == 204
        assert await receiver.wait("t1", 10)
    assert (receiver.counts.received, receiver.counts.refused) == (1, 2)
