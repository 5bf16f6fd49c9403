"""Fixtures of the contract suite: every case runs once per `BackendTarget` (targets.py).

Daemons are slow to start (each runs its real agent CLI), so the mock model and the daemons of
a target live for a whole test module (`serve` below), and each case works on a context of its
own; `model` gives each case a mock with an empty script and no recorded requests.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.mock_models.model import MockModel
from tests.contract.agent import Agent
from tests.contract.targets import BackendTarget, Places, targets_for, targets_lacking
from tests.support.daemon import Daemons

Serve = Callable[..., Agent]
# A developer's own agent settings must not leak into the daemons under test.
_AMBIENT = ("COPILOT_", "GH_", "GITHUB_", "ANTHROPIC_", "CLAUDE_", "CODEX_", "OPENCODE_")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "needs(*capabilities): the contract case runs only for targets that lack none of them"
        " (tests/contract/targets.py CAPABILITIES)",
    )
    config.addinivalue_line(
        "markers",
        "lacks(*capabilities): a refusal case, run only for targets that lack all of them; when"
        " every target has them it is deselected (not skipped)",
    )


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Each case once per target that has what it needs (targets.py says how)."""
    if "target" not in metafunc.fixturenames:
        return
    needs = {c for mark in metafunc.definition.iter_markers("needs") for c in mark.args}
    lacked = {c for mark in metafunc.definition.iter_markers("lacks") for c in mark.args}
    targets = targets_for(needs)
    if lacked:
        targets = targets_lacking(lacked, targets)
        if not targets:
            # Every agent can do it, so nobody refuses it: one placeholder, deselected below.
            metafunc.parametrize("target", [_NOBODY_LACKS], ids=str, scope="module")
            return
    if not targets:
        # An empty parameter set would be a skip; CI allows none.
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: no contract target has {needs}")
    metafunc.parametrize("target", targets, ids=str, scope="module")


_NOBODY_LACKS = "nobody-lacks-it"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the placeholder of a refusal case no target lacks the capability for."""
    gone = [i for i in items if i.name.endswith(f"[{_NOBODY_LACKS}]")]
    if gone:
        config.hook.pytest_deselected(items=gone)
        items[:] = [i for i in items if i not in gone]


@pytest.fixture(scope="session")
def shared_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XDG_CACHE_HOME of every daemon: the Copilot CLI unpacks itself there once (235 MB)."""
    return tmp_path_factory.mktemp("agent-cache")


@pytest.fixture(scope="module")
def _hermetic_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(_AMBIENT) or name == "OPENAI_API_KEY":
                patch.delenv(name)
        yield


@pytest.fixture(scope="module")
def module_model(target: BackendTarget, _hermetic_env: None) -> Iterator[MockModel]:
    with MockModel(target.mock, api_key=target.api_key) as model:
        yield model


@pytest.fixture
def model(module_model: MockModel) -> MockModel:
    module_model.reset()
    return module_model


@pytest.fixture(scope="module")
def serve(
    target: BackendTarget,
    module_model: MockModel,
    shared_cache: Path,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Serve]:
    """`serve(**config)`: a started daemon for `target` (module-scoped fixtures call it once);
    every daemon is stopped at the end of the module."""
    daemons: list[Daemons] = []
    agents: list[Agent] = []

    def start(*, block: dict[str, Any] | None = None, **sections: Any) -> Agent:
        root = tmp_path_factory.mktemp(f"{target.name}-daemon")
        made = Daemons(root)
        daemons.append(made)
        places = Places(root, shared_cache)
        agent = Agent(target, module_model, places, made, block=block, **sections)
        agents.append(agent)
        agent.start()
        return agent

    yield start
    for agent in agents:
        agent.close()
    for made in daemons:
        made.close()
