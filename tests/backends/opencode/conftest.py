"""Fixtures for the OpenCode e2e tests: the real `opencode` binary, the project's mock model,
and the daemon's real app, with OpenCode's state isolated per test under tmp_path."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from core.backend.base import BackendUnavailableError
from core.daemon import create_app
from core.settings import Settings, load
from harness.mock_models.openai_chat import OpenAIChatMock
from harness.opencode import TEST_ENV, provider_config
from wrappers.opencode.launch import find_binary

Client = TestClient[Any, Any]


@pytest.fixture(scope="session")
def opencode_binary() -> Path:
    """The pinned binary; its absence fails the test (CI must run these, never skip them)."""
    try:
        return find_binary(None)
    except BackendUnavailableError as exc:
        pytest.fail(f"{exc} (the e2e tests need the real OpenCode)")


@pytest.fixture
async def mock() -> AsyncIterator[OpenAIChatMock]:
    async with OpenAIChatMock() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "project"
    directory.mkdir()
    (directory / "README.md").write_text("A scratch project for the OpenCode e2e tests.\n")
    return directory


MakeSettings = Callable[..., Settings]


@pytest.fixture
def opencode_settings(
    tmp_path: Path, project: Path, mock: OpenAIChatMock, opencode_binary: Path
) -> MakeSettings:
    """Settings for a daemon serving OpenCode against the mock; keyword overrides merge into
    the top-level blocks (`opencode={...}`, `timeouts={...}`, ...)."""

    def make(**overrides: Any) -> Settings:
        base: dict[str, Any] = {
            "backend": "opencode",
            "storage": {"kind": "sqlite", "path": str(tmp_path / "tasks.sqlite3")},
            "agentCard": {"name": "OpenCode under test", "description": "e2e"},
            "opencode": {
                "workingDirectory": str(project),
                "home": str(tmp_path / "opencode-home"),
                "cliPath": str(opencode_binary),
                "model": "mock/mock-model",
                "env": TEST_ENV,
                "config": provider_config(mock.base_url),
            },
        }
        for key, value in overrides.items():
            base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
        return load(None, overrides=base, environ={})

    return make


StartDaemon = Callable[..., Awaitable[Client]]


@pytest.fixture
def start_daemon(
    aiohttp_client: Callable[..., Awaitable[Client]],
) -> StartDaemon:
    """The daemon's real app (real backend from the settings, SQLite store) on a test server."""

    async def start(settings: Settings, **app_options: Any) -> Client:
        return await aiohttp_client(create_app(settings, **app_options))

    return start
