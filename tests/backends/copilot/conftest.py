"""Fixtures for the Copilot backend tests: the real CLI, the chat completions mock, isolated
Copilot state per test."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from core.backend import procfs
from core.daemon import create_app
from core.settings import Settings, load
from harness.mock_models.openai_chat import MODEL, OpenAIChatMock
from tests.support.orphans import cmdline
from wrappers.copilot.backend import CopilotBackend
from wrappers.copilot.config import CopilotConfig

REPO = Path(__file__).resolve().parents[3]
# `make test` installs the pinned CLI here (npm @github/copilot@1.0.102).
BUNDLED_CLI = REPO / ".tools" / "node_modules" / "@github" / "copilot-linux-x64" / "copilot"
API_KEY = "mock-key"

Client = TestClient[Any, Any]


@pytest.fixture(scope="session")
def copilot_cli() -> Path:
    """The real CLI. Missing is a failure, never a skip: CI must run these tests."""
    candidate = Path(os.environ.get("COPILOT_CLI_PATH") or BUNDLED_CLI)
    if not candidate.is_file():
        pytest.fail(
            f"the copilot CLI is not at {candidate}: run `make test` (it installs "
            "@github/copilot@1.0.102 into .tools) or set COPILOT_CLI_PATH"
        )
    return candidate


@pytest.fixture(scope="session")
def copilot_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """XDG_CACHE_HOME shared by every test on purpose: the CLI unpacks itself there (235 MB,
    ~1.5 s) on first run. Conversation state (COPILOT_HOME) stays per test."""
    return tmp_path_factory.mktemp("copilot-cache")


@pytest.fixture(autouse=True)
def _no_ambient_copilot_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's own Copilot/GitHub settings must not leak into the tests."""
    for name in list(os.environ):
        if name.startswith(("COPILOT_", "GH_", "GITHUB_")) or name == "OPENAI_API_KEY":
            monkeypatch.delenv(name)


@pytest.fixture
async def mock() -> AsyncIterator[OpenAIChatMock]:
    async with OpenAIChatMock(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "README.md").write_text("scratch project for the copilot tests\n")
    return path


ConfigFactory = Callable[..., dict[str, Any]]


@pytest.fixture
def copilot_block(
    tmp_path: Path, project: Path, mock: OpenAIChatMock, copilot_cli: Path, copilot_cache: Path
) -> ConfigFactory:
    """The `copilot` block pointing the real CLI at the mock, offline, state under tmp_path."""

    def make(**overrides: Any) -> dict[str, Any]:
        block: dict[str, Any] = {
            "workingDirectory": str(project),
            "cliPath": str(copilot_cli),
            "home": str(tmp_path / "copilot-home"),
            "model": MODEL,
            "offline": True,
            "provider": {"baseUrl": mock.base_url, "apiKey": API_KEY},
            "env": {"HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": str(copilot_cache)},
        }
        block.update(overrides)
        return block

    return make


SettingsFactory = Callable[..., Settings]


@pytest.fixture
def copilot_settings(tmp_path: Path, copilot_block: ConfigFactory) -> SettingsFactory:
    def make(copilot: dict[str, Any] | None = None, **sections: Any) -> Settings:
        data: dict[str, Any] = {
            "backend": "copilot",
            "storage": {"kind": "memory"},
            "copilot": copilot_block(**(copilot or {})),
            **sections,
        }
        return load(None, overrides=data, environ={})

    return make


AppFactory = Callable[..., Awaitable[Client]]


@pytest.fixture
def copilot_app(
    aiohttp_client: Callable[..., Awaitable[Client]], copilot_settings: SettingsFactory
) -> AppFactory:
    """The real daemon app serving the real backend (built from the settings, as `serve`
    does); `backend=` lets a test keep a handle on the backend it passes in."""

    async def make(
        settings: Settings | None = None, *, backend: CopilotBackend | None = None, **app: Any
    ) -> Client:
        return await aiohttp_client(
            create_app(settings or copilot_settings(), backend=backend, **app)
        )

    return make


def backend_for(settings: Settings) -> CopilotBackend:
    block = settings.backend_block()
    assert isinstance(block, CopilotConfig)
    return CopilotBackend(block)


def cli_pids() -> set[int]:
    """The running Copilot CLI children of this test process (`copilot --headless ...`)."""
    return {p.pid for p in procfs.children(os.getpid()) if "--headless" in cmdline(p.pid)}
