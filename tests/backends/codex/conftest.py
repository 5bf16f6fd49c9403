"""Fixtures of the Codex tests: the mock model, and the real backend (or the whole daemon app)
driving the real codex binary against it, with Codex's state isolated under tmp_path."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from core.daemon import create_app
from harness.codex import codex_block
from harness.mock_models.openai_responses import ResponsesMock
from tests.backends.codex.support import codex_settings
from tests.support.hosting import Hosted
from wrappers.codex.appserver import Tap
from wrappers.codex.backend import CodexBackend
from wrappers.codex.config import CodexConfig

Client = TestClient[Any, Any]
MakeBackend = Callable[..., Awaitable[CodexBackend]]
MakeCodexClient = Callable[..., Awaitable[Client]]


@pytest.fixture
async def mock() -> AsyncIterator[ResponsesMock]:
    async with ResponsesMock.running() as running:
        yield running


@pytest.fixture
def codex_root(tmp_path: Path) -> Path:
    return tmp_path / "codex"


@pytest.fixture
def codex_config(mock: ResponsesMock, codex_root: Path) -> Callable[..., CodexConfig]:
    def build(**overrides: Any) -> CodexConfig:
        return CodexConfig.model_validate(codex_block(mock.base_url, codex_root, **overrides))

    return build


@pytest.fixture
async def make_backend(
    codex_config: Callable[..., CodexConfig],
) -> AsyncIterator[MakeBackend]:
    """Backends started and served as the engine runs them, each closed at teardown (closing
    one a test closed already is harmless)."""
    started: list[Hosted] = []

    async def make(
        clock: Callable[[], float] = time.monotonic, tap: Tap | None = None, **overrides: Any
    ) -> CodexBackend:
        backend = CodexBackend(codex_config(**overrides), clock=clock, tap=tap)
        hosted = Hosted(backend)
        await hosted.start()
        started.append(hosted)
        return backend

    yield make
    for hosted in reversed(started):
        await hosted.aclose()


@pytest.fixture
def make_codex_client(
    aiohttp_client: Callable[..., Awaitable[Client]],
    mock: ResponsesMock,
    codex_root: Path,
) -> MakeCodexClient:
    """The real app (`create_app`); its backend is built by the registry from the settings,
    unless a test passes one to look into."""

    async def make(
        *,
        codex: dict[str, Any] | None = None,
        backend: CodexBackend | None = None,
        clock: Callable[[], datetime] | None = None,
        **sections: Any,
    ) -> Client:
        settings = codex_settings(mock, codex_root, codex=codex, **sections)
        extra: dict[str, Any] = {"clock": clock} if clock is not None else {}
        return await aiohttp_client(create_app(settings, backend=backend, **extra))

    return make
