"""Push where offered: the crew follows a push-capable agent's tasks through its own loopback
webhook (one GetTask per task, to confirm), and polls the others; the receiver refuses a
notification without the job's token."""

from __future__ import annotations

import re

import anyio
import httpx
from a2a.types import ListTaskPushNotificationConfigsRequest

from examples.crew.agents.push import TOKEN_HEADER, PushReceiver
from examples.crew.plan.plan import parse_plan
from examples.crew.run.job import JobResult
from examples.crew.show.events import NobodyAsker, PresetAnswers
from tests.crew.agents import CrewBackend
from tests.crew.conftest import RunCrew, StartAgent
from tests.crew.test_serve import sdk

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


async def webhooks(url: str, task_id: str, other_than: str = "") -> list[str]:
    """The webhook URLs of the task's push configs, once one is not `other_than`."""
    client, http = await sdk(url)
    try:
        while True:
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task_id)
            )
            found = [c.url for c in listed.configs]
            if any(u != other_than for u in found):
                return found
            await anyio.sleep(0.02)
    finally:
        await http.aclose()


async def test_a_resumed_task_is_followed_by_this_runs_webhook(
    start_agent: StartAgent, crew: RunCrew
) -> None:
    agent = CrewBackend()
    url = await start_agent(agent, push=PUSH)
    plan = parse_plan(
        {"agents": {"a": {"card": url}}, "steps": [{"id": "s", "agent": "a", "prompt": "block"}]},
        {},
    )
    result: list[JobResult] = []

    async def run(job_input: str | None) -> None:
        result.append(await crew(plan, job_input))

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:  # the first run stops (as on Ctrl-C)
            tg.start_soon(run, "the input")
            await agent.started.wait()
            tg.cancel_scope.cancel()
        [first] = await webhooks(url, agent.turns[0].task_id)
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, None)
            # This run's webhook replaces the first run's (gone with it).
            assert await webhooks(url, agent.turns[0].task_id, other_than=first) != [first]
            agent.release()
    [done] = result
    assert done.outcome.state == "done", done.report
    # GetTask once as the run takes the task over, once to confirm what the push announced.
    assert waiting_row(done.report, "a") == ("push", 2)
    assert len(agent.turns) == 1  # followed, never sent again
