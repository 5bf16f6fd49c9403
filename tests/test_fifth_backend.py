"""A fifth backend is one package: `tests/support/fifth_backend` registered by entry points (a
`*.dist-info/entry_points.txt` in a folder put on the path, as `pip install` would leave it),
with no other file of the project changed. The real daemon serves it, validates its `fifth`
block with its own model, and it passes the whole contract suite (tests/contract) as the target
its package registers, talking to the project's chat mock over HTTP like the real CLIs talk to
theirs. The cases here are its quirks."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from importlib.metadata import entry_points
from pathlib import Path

import httpx
import pytest

from core import registry
from core.settings import ConfigError, load
from harness.mock_models.model import MockModel
from harness.mock_models.steps import Say, Upstream
from tests.contract.agent import Agent, answer, context, state, status_text
from tests.contract.targets import Places
from tests.support import pytest_run
from tests.support.daemon import REPO, Daemon, Daemons, MakeDaemon
from tests.support.errors import SECRET
from tests.support.fifth_backend import FifthConfig
from tests.support.fifth_backend.contract import TARGET

ENTRY_POINTS = """\
[a2a_wrapper.backends]
fifth = tests.support.fifth_backend:SPEC

[a2a_wrapper.contract_targets]
fifth = tests.support.fifth_backend.contract:TARGET
"""
COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fifth backend installed by entry point, for this process and the daemons it starts."""
    site = pytest_run.install(tmp_path / "site", "a2a-wrapper-fifth", ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    path = os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path.rstrip(os.pathsep))
    yield site


@pytest.fixture
def fifth(installed: Path, tmp_path: Path) -> Iterator[Agent]:
    """A daemon serving the fifth backend against a chat mock (started)."""
    daemons = Daemons(tmp_path / "daemons")
    daemons.root.mkdir()
    with MockModel("openai_chat") as model:
        agent = Agent(TARGET, model, Places(tmp_path / "daemons", tmp_path / "cache"), daemons)
        try:
            agent.start()
            yield agent
        finally:
            agent.close()
            daemons.close()


def test_the_entry_points_make_the_backend_and_its_contract_target_known(
    installed: Path,
) -> None:
    assert "fifth" in registry.names()
    spec = registry.spec_for("fifth")
    assert spec is not None
    assert spec.config_model is FifthConfig
    targets = entry_points(group="a2a_wrapper.contract_targets")
    assert [t.load() for t in targets if t.name == "fifth"] == [TARGET]


def test_its_block_is_validated_by_its_own_model(installed: Path) -> None:
    settings = load(
        None, overrides={"backend": "fifth", "fifth": {"baseUrl": "http://m/v1"}}, environ={}
    )
    assert settings.block(FifthConfig).base_url == "http://m/v1"

    with pytest.raises(ConfigError) as caught:
        load(None, overrides={"backend": "fifth", "fifth": {"baseUrl": "ftp://m", "x": 1}})
    assert "fifth.baseUrl: must be an http:// or https:// URL" in str(caught.value)
    assert "fifth.x: unknown key" in str(caught.value)


def test_without_the_entry_point_the_name_is_unknown() -> None:
    assert "fifth" not in registry.names()
    with pytest.raises(registry.UnknownBackendError, match="unknown backend 'fifth'"):
        registry.spec_for("fifth")


@pytest.mark.timeout(300)
def test_it_passes_the_whole_contract_suite(installed: Path) -> None:
    every = pytest_run.collected(installed, "tests/contract")

    done = pytest_run.run(installed, "-q", "-rA", "-k", "fifth", "tests/contract", timeout=280)

    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    ran = pytest_run.by_target(pytest_run.passed(done))
    assert set(ran) == {"fifth"}
    assert ran["fifth"] == every["fifth"], "every case collected for it passed"
    # It declares no conversation control: those cases select by capability (refusals on it),
    # every other case is the same as for a target that lacks nothing.
    control = {c for c in every["claude"] | every["fifth"] if "test_control.py" in c}
    assert every["fifth"] - control == every["claude"] - control, "every case, none left out"
    refusals = ("test_steering_an_agent_that_cannot", "test_forking_on_an_agent_that_cannot")
    assert all(any(r in c for c in every["fifth"]) for r in refusals), "the refusals run on it"


def test_the_daemon_is_ready_while_its_serve_runs_and_contexts_are_apart(fifth: Agent) -> None:
    # Healthy only while its serve() runs: the engine hosts it in its task group.
    ready = httpx.get(f"{fifth.daemon.url}/ready")
    assert ready.status_code == 200, ready.text
    fifth.model.script([Say("Noted: KIWI.")])
    told = fifth.send("Remember the word KIWI.", first := context())

    other = fifth.send("Which word did I ask you to remember?", context())

    assert answer(told) == "Noted: KIWI."
    assert state(other) == COMPLETED, other
    request = fifth.model.requests[-1]
    assert "KIWI" not in request.dump(), "another context is another conversation"
    again = fifth.send("Which word was it?", first)
    assert "Noted: KIWI." in fifth.model.requests[-1].texts("assistant"), again


def test_a_model_error_fails_the_task_with_a_safe_message_and_the_session_goes_on(
    fifth: Agent,
) -> None:
    fifth.model.script([Upstream(500, f"upstream says: {SECRET}")])
    ctx = context()

    task = fifth.send("This will fail.", ctx)
    after = fifth.send("hello again", ctx)

    assert state(task) == "TASK_STATE_FAILED"
    message = status_text(task)
    assert message.startswith("The model refused the turn. The daemon log has the details")
    assert SECRET not in json.dumps(task)
    assert state(after) == COMPLETED, "the session goes on"


def test_a_wrong_block_stops_the_daemon_naming_the_key(
    installed: Path, tmp_path: Path, daemons: MakeDaemon
) -> None:
    config = {"backend": "fifth", "fifth": {"baseUrl": "http://127.0.0.1:9/v1", "bogus": 1}}
    daemon: Daemon = daemons(config)

    code, _, err = daemon.run_to_exit()

    assert code == 2
    assert "fifth.bogus: unknown key" in err
