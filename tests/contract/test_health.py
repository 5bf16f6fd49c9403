"""Every backend: what the model provider refuses is named. A refused key leaves the task
AUTH_REQUIRED with the fix on the daemon's host, and once the key is good again the context's
next message continues the same session; a rate limit and a used-up quota fail the task with
their kind (and when to retry); a session the agent lost is reported as a reset, never hidden.
The mocks refuse as the real providers do (harness/mock_models/refusals.py)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import httpx
import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Say, out_of_quota, rate_limited, refused_key
from tests.contract.agent import Agent, context, state, status_text, wrapper
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget

COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"


@pytest.fixture(scope="module")
def agent(target: BackendTarget, serve: Serve) -> Agent:
    return serve(block=target.health_block)


def ready(agent: Agent) -> httpx.Response:
    return httpx.get(f"{agent.daemon.url}/ready", timeout=30)


def test_a_refused_key_asks_for_the_fix_and_the_fixed_key_continues_the_session(
    agent: Agent, model: MockModel
) -> None:
    ctx = context()
    model.script([Say("Noted: KIWI.")])
    first = agent.send("Remember the word KIWI.", ctx)
    assert state(first) == COMPLETED, first

    model.script([refused_key()])
    refused = agent.send("Are you there?", ctx)

    assert state(refused) == "TASK_STATE_AUTH_REQUIRED", refused
    assert wrapper(refused)["error"]["kind"] == "auth"
    assert agent.target.credentials_fix in status_text(refused)
    assert "x-api-key" not in json.dumps(refused).lower(), "no provider text"
    assert "incorrect api key" not in json.dumps(refused).lower(), "no provider text"
    answer = ready(agent)
    assert answer.status_code == 503
    assert answer.json()["reason"] == "credentials"

    # The key is good again (the mock takes it): the task goes on in the same session.
    fixed = agent.reply(refused, {"text": "Which word did I ask you to remember?"})

    assert state(fixed) == COMPLETED, fixed
    assert wrapper(fixed)["sessionId"] == wrapper(first)["sessionId"]
    assert wrapper(fixed)["contextReset"] is False
    request = model.wait_for_request(lambda r: "Which word did I" in r.last_user_text)
    assert "Noted: KIWI." in request.texts("assistant")
    assert ready(agent).status_code == 200


def test_a_rate_limit_fails_with_its_kind_and_when_to_retry(agent: Agent, model: MockModel) -> None:
    model.script([rate_limited(2)])

    task = agent.send("This will be rate-limited.", context())

    assert state(task) == FAILED, task
    error = wrapper(task)["error"]
    assert error["kind"] == "rateLimit", error
    assert error["retryAfter"] == pytest.approx(2, abs=1), error
    assert re.search(r"Try again in [\d.]+ s\.", status_text(task)), status_text(task)
    assert "Rate limit reached" not in json.dumps(task), "no provider text"


@pytest.mark.needs("quota")
@pytest.mark.timeout(240)
def test_a_used_up_quota_fails_with_its_kind(agent: Agent, model: MockModel) -> None:
    model.script([out_of_quota()])

    # Some agents retry it with a backoff of their own first (Copilot CLI: 5 times, about a
    # minute): followed, not awaited in one call.
    sent = agent.send("This account has no quota left.", context(), returnImmediately=True)
    task = agent.until_done(sent["id"], timeout=200)

    assert state(task) == FAILED, task
    assert wrapper(task)["error"]["kind"] == "quota", wrapper(task)
    assert status_text(task), "the caller is told why"
    assert "billing details" not in json.dumps(task), "no provider text"


def test_a_session_lost_behind_the_daemons_back_is_reported_as_a_reset(
    agent: Agent, model: MockModel
) -> None:
    ctx = context()
    model.script([Say("Noted: LIME.")])
    first = agent.send("Remember the word LIME.", ctx)
    assert state(first) == COMPLETED, first
    session = wrapper(first)["sessionId"]

    # Stopped, so nothing of the session stays in memory or in an open file.
    assert agent.daemon.stop() == 0
    forgotten = forget(agent.places.root, session)
    assert forgotten, f"no state of session {session} found under {agent.places.root}"
    agent.start()
    again = agent.send("What did I ask you to remember?", ctx)

    assert state(again) == COMPLETED, again
    assert wrapper(again)["contextReset"] is True, wrapper(again)
    assert wrapper(again)["resetReason"]
    assert wrapper(again)["newSession"] is True


def forget(root: Path, session: str) -> list[Path]:
    """Delete every file of the daemon's agent state that names `session` (in its path or its
    content), as a user cleaning up the agent's folders would; the task store stays."""
    gone: list[Path] = []
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if path.name.startswith("tasks.sqlite3") or path.is_symlink():
                continue
            try:
                named = session in str(path) or session.encode() in path.read_bytes()
            except OSError:
                continue
            if named:
                path.unlink()
                gone.append(path)
    return gone
