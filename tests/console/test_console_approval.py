"""An approval answered by a click in the console runs the agent's command: the real Claude
Code CLI on its scripted mock model asks to run a shell command (`approvals.mode: ask`), the
console (on by default for a loopback bind, no tokens: the anonymous principal) lists the
question, a click on Approve answers it and the command runs. The daemon is the real
`a2a-wrapper serve` process, the browser a real headless Chromium."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Shell
from tests.console.browser import chromium, screenshot, text, until
from tests.contract.agent import Agent, context, state, wrapper, write_marker
from tests.contract.targets import ESCALATION, TARGETS, Places
from tests.support.daemon import Daemons

CLAUDE = next(t for t in TARGETS if t.name == "claude")
AMBIENT = ("ANTHROPIC_", "CLAUDE_")

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[MockModel]:
    for name in list(os.environ):
        if name.startswith(AMBIENT):
            monkeypatch.delenv(name)
    with MockModel(CLAUDE.mock, api_key=CLAUDE.api_key) as mock:
        yield mock


@pytest.fixture
def asking(model: MockModel, tmp_path: Path) -> Iterator[Agent]:
    daemons = Daemons(tmp_path / "daemon")
    places = Places(tmp_path / "daemon", tmp_path / "cache")
    agent = Agent(CLAUDE, model, places, daemons, block=CLAUDE.asks, approvals={"mode": "ask"})
    agent.start()
    yield agent
    agent.close()
    daemons.close()


def test_an_approval_clicked_in_the_console_runs_the_agents_command(
    asking: Agent, model: MockModel
) -> None:
    marker = write_marker(asking.places, CLAUDE.marker_outside)
    command = CLAUDE.approval_command(marker)
    model.script([Shell(command, escalate=ESCALATION)])
    ctx = context()
    asked = asking.send(f"Please run the command. {uuid.uuid4().hex[:6]}", ctx)
    assert state(asked) == "TASK_STATE_INPUT_REQUIRED", asked
    assert not marker.exists()

    with chromium() as driver:
        driver.get(f"{asking.daemon.url}/console")
        pending = until(lambda: text(driver, "#pending"), "the index")
        assert "Bash" in pending and asked["id"][:8] in pending
        screenshot(driver, "index-pending-approval")
        driver.get(f"{asking.daemon.url}/console/tasks/{asked['id']}")
        assert command in text(driver, "form.answer")
        screenshot(driver, "task-approval")
        driver.find_element(By.CSS_SELECTOR, "form.answer button.approve").click()
        # Reflected at once: the page after the click no longer asks.
        until(lambda: not driver.find_elements(By.CSS_SELECTOR, "form.answer"), "answered")
        until(lambda: "completed" in text(driver, "#state"), "completed", timeout=120)
        screenshot(driver, "task-approved-completed")

    done = asking.until_done(asked["id"], timeout=120)
    assert state(done) == "TASK_STATE_COMPLETED", done
    assert marker.exists(), "the approved command ran"
    assert [(d["decision"], d["by"]) for d in wrapper(done)["approvals"]] == [("approve", "caller")]
