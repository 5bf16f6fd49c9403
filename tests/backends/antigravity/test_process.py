"""The harness runs under the kit's orphan guard (`harness.start_harness`): a session of its own,
the instance marker, a parent-death signal; it never outlives the daemon, killed or stopped, and
neither does the command it runs. Real daemon, real SDK runtime, the chat completions mock."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.backend import procfs
from harness.mock_models.model import MockModel
from harness.mock_models.steps import Say, Shell
from tests.contract.agent import Agent, context, state
from tests.contract.targets import TARGETS, Places
from tests.support.daemon import Daemons
from tests.support.orphans import await_gone, await_instance_gone, cmdline, logged

TARGET = next(t for t in TARGETS if t.name == "antigravity")
SLEEP = "echo waiting && sleep 1000"


@pytest.fixture
def model() -> Iterator[MockModel]:
    with MockModel("openai_chat") as mock:
        yield mock


@pytest.fixture
def agent(model: MockModel, tmp_path: Path) -> Iterator[Agent]:
    daemons = Daemons(tmp_path)
    served = Agent(
        TARGET, model, Places(tmp_path, tmp_path / "cache"), daemons, block=TARGET.runs_shell
    )
    served.start()
    yield served
    served.close()
    daemons.close()


def instance(agent: Agent) -> str:
    return str(logged(agent.daemon, "daemon.instance")[0]["instance"])


def harness_of(agent: Agent) -> procfs.ProcessInfo:
    (harness,) = [p for p in agent.processes() if p.ppid == agent.daemon.pid]
    return harness


def running_sleep(agent: Agent, model: MockModel) -> list[procfs.ProcessInfo]:
    """A turn whose command runs `sleep 1000`; the instance's processes once it does."""
    model.script([Shell(SLEEP)])
    agent.send("Run the long command.", context(), returnImmediately=True)
    deadline = time.monotonic() + 45
    while not any(cmdline(p.pid)[-2:] == ["sleep", "1000"] for p in agent.processes()):
        assert time.monotonic() < deadline, "the agent never ran its command"
        time.sleep(0.05)
    return agent.processes()


def test_the_harness_leads_a_session_of_its_own_and_carries_the_instance_marker(
    agent: Agent, model: MockModel
) -> None:
    model.script([Say("Hello.")])
    assert state(agent.send("Say hello.", context())) == "TASK_STATE_COMPLETED"

    harness = harness_of(agent)

    assert Path(cmdline(harness.pid)[0]).name == "localharness", "setpriv exec'd it: same pid"
    assert os.getsid(harness.pid) == harness.pid
    assert harness.pgid == harness.pid
    assert procfs.environment_has(harness.pid, procfs.MARKER_VARIABLE, instance(agent))


def test_a_killed_daemon_takes_its_harness_along_and_the_next_start_stops_the_command(
    agent: Agent, model: MockModel, leftovers: list[procfs.ProcessInfo]
) -> None:
    running = running_sleep(agent, model)
    leftovers.extend(running)
    harness = harness_of(agent)
    marker = instance(agent)

    agent.daemon.kill()

    await_gone([harness.pid])  # its parent-death signal: nobody else is left to stop it
    agent.daemon.start()
    await_instance_gone(running, marker)


def test_a_stopped_daemon_leaves_neither_the_harness_nor_its_command(
    agent: Agent, model: MockModel, leftovers: list[procfs.ProcessInfo]
) -> None:
    running = running_sleep(agent, model)
    leftovers.extend(running)

    assert agent.daemon.stop() == 0

    await_instance_gone(running, instance(agent))
