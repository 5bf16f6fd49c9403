"""`agents.<role>.alternates`: an agent that is unreachable, or fails its retries, hands the
step to the next alternate; the ledger keeps each agent's record (success rate, latency) and
`check` shows it."""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
import pytest
from aiohttp.test_utils import TestServer

from examples.crew.ledger.ledger import Ledger
from examples.crew.plan.plan import parse_plan
from examples.crew.run.job import JobError
from tests.crew.agents import CrewBackend, RoleBackend
from tests.crew.busy import BusyAgent
from tests.crew.conftest import RunCrew, StartAgent

REPO = Path(__file__).resolve().parents[2]


def closed_port() -> str:
    """A loopback URL nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


async def test_an_unreachable_agent_and_one_that_fails_hand_the_step_to_alternates(
    start_agent: StartAgent, crew: RunCrew, ledger: Ledger, tmp_path: Path
) -> None:
    failing = await start_agent(CrewBackend(), name="fails")
    standby = await start_agent(RoleBackend({"role": "writer", "name": "standby"}))
    dead = closed_port()
    doc = {
        "agents": {
            "writer": {"card": dead, "alternates": [{"card": standby}]},
            "tester": {"card": failing, "alternates": [{"card": standby}]},
        },
        "steps": [
            {"id": "write", "agent": "writer", "prompt": "say: code"},
            {
                "id": "test",
                "agent": "tester",
                "prompt": "fail: no tests today",
                "retries": 1,
                "retryDelay": 0,
            },
        ],
    }
    plan = parse_plan(doc, {})
    result = await crew(plan)
    assert result.outcome.state == "done", result.report
    runs = await ledger.runs("job-1")
    assert [(r.step_id, r.agent, r.state) for r in runs if r.step_id == "write"] == [
        ("write", "writer#1", "done")
    ]
    assert [(r.agent, r.state) for r in runs if r.step_id == "test"] == [
        ("tester", "failed"),
        ("tester", "failed"),
        ("tester#1", "done"),
    ]
    bad, good = (
        await ledger.agent_record(f"{failing}/.well-known/agent-card.json"),
        (await ledger.agent_record(f"{standby}/.well-known/agent-card.json")),
    )
    assert (bad.done, bad.failed, bad.success_rate) == (0, 2, 0.0)
    assert (good.done, good.failed, good.success_rate) == (2, 0, 1.0)
    assert len(good.latencies) == 2

    path = tmp_path / "plan.json"
    path.write_text(json.dumps(doc))
    checked = await anyio.run_process(
        [sys.executable, "-m", "examples.crew", "check", str(path), "--ledger", str(ledger.path)],
        cwd=REPO,
        env={**os.environ},
        check=False,
    )
    out = checked.stdout.decode()
    assert checked.returncode == 0, checked.stderr.decode()
    assert f"writer: unusable at {dead}/.well-known/agent-card.json" in out
    assert "record: 0/2 tasks done (0%)" in out
    assert "record: 2/2 tasks done (100%), latency median" in out
    lines = out.splitlines()  # one line per agent and alternate, then the plan's
    assert [line.split(":")[0] for line in lines] == [
        "tester",
        "tester#1",
        "writer",
        "writer#1",
        "plan 'crew'",
    ], out


async def test_a_role_with_no_usable_agent_fails_the_job_before_sending(
    crew: RunCrew, ledger: Ledger
) -> None:
    doc = {
        "agents": {"writer": {"card": closed_port(), "alternates": [{"card": closed_port()}]}},
        "steps": [{"id": "write", "agent": "writer", "prompt": "say: code"}],
    }
    with pytest.raises(JobError, match="card unreachable"):
        await crew(parse_plan(doc, {}))
    assert await ledger.runs("job-1") == []


@pytest.mark.parametrize("kind", ["rateLimit", "quota", "http"])
async def test_a_rate_limited_or_out_of_quota_agent_hands_the_step_to_its_alternate(
    start_agent: StartAgent,
    aiohttp_server: Callable[..., Awaitable[TestServer]],
    crew: RunCrew,
    ledger: Ledger,
    kind: str,
) -> None:
    """The primary answers 429 (its provider's, reported as `a2aWrapper.error.kind`, or its
    own server's): the step goes to the alternate at once, without retrying the busy agent."""
    standby_agent = CrewBackend()
    standby = await start_agent(standby_agent, name="standby")
    busy = BusyAgent(standby, kind)
    server = await aiohttp_server(busy.app())
    primary = str(server.make_url("")).rstrip("/")
    doc = {
        "agents": {"writer": {"card": primary, "alternates": [{"card": standby}]}},
        "steps": [{"id": "write", "agent": "writer", "prompt": "say: code", "retries": 2}],
    }
    result = await crew(parse_plan(doc, {}))
    assert result.outcome.state == "done", result.report
    assert busy.requests.count("SendMessage") == 1  # not retried there
    assert [t.text for t in standby_agent.turns] == ["say: code"]
    runs = await ledger.runs("job-1", "write")
    assert [(r.agent, r.state) for r in runs][-1] == ("writer#1", "done")
    if kind != "http":
        assert [(r.agent, r.state) for r in runs] == [("writer", "failed"), ("writer#1", "done")]
        assert f"({kind})" in result.report  # the report says why it moved
