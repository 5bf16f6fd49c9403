"""Shared fixtures: the real app (`create_app`) on pytest-aiohttp's test server."""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from core.backend import procfs
from core.daemon import create_app
from core.settings import Settings, load
from core.storage.contracts import TaskStore
from core.storage.memory import InMemoryTaskStore
from harness.postgres import PostgresServer, fresh_database, running_server
from tests.support.daemon import Daemons, MakeDaemon
from tests.support.orphans import still_running
from tests.support.scripted import ScriptedBackend

Client = TestClient[Any, Any]
MakeClient = Callable[..., Awaitable[Client]]


def make_settings(**overrides: Any) -> Settings:
    base: dict[str, Any] = {
        "backend": "tests.support.scripted:ScriptedBackend",
        "storage": {"kind": "memory"},
        "agentCard": {
            "name": "Test agent",
            "description": "scripted",
            "skills": [{"id": "echo", "name": "Echo", "description": "echoes", "tags": ["echo"]}],
        },
    }
    for key, value in overrides.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return load(None, overrides=base, environ={})


@pytest.fixture
def backend() -> ScriptedBackend:
    return ScriptedBackend()


@pytest.fixture
def make_client(
    aiohttp_client: Callable[..., Awaitable[Client]], backend: ScriptedBackend
) -> MakeClient:
    async def make(
        settings: Settings | None = None,
        *,
        store: TaskStore | None = None,
        backend_: Any = None,
        **app_options: Any,
    ) -> Client:
        app = create_app(
            settings or make_settings(),
            backend=backend_ or backend,
            store=store or InMemoryTaskStore(),
            **app_options,
        )
        return await aiohttp_client(app)

    return make


@pytest.fixture
async def client(make_client: MakeClient) -> Client:
    return await make_client()


@pytest.fixture
def daemons(tmp_path: Path) -> Iterator[MakeDaemon]:
    """Real daemon processes (`daemons(config)`); stopped at teardown even when the test
    fails half-way."""
    made = Daemons(tmp_path)
    yield made
    made.close()


@pytest.fixture
def leftovers() -> Iterator[list[procfs.ProcessInfo]]:
    """Agent processes a test saw; whatever still runs at teardown is killed."""
    seen: list[procfs.ProcessInfo] = []
    yield seen
    for info in still_running(seen):
        procfs.kill(info)


@pytest.fixture
def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


_skipped: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and not hasattr(report, "wasxfail"):
        _skipped.append(report.nodeid)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI (`A2A_WRAPPER_FAIL_ON_SKIP=1`, set by .ci/run) a skipped test fails the run: tests
    that need a real backend CLI must run there, never quietly skip."""
    if os.environ.get("A2A_WRAPPER_FAIL_ON_SKIP") == "1" and _skipped and exitstatus == 0:
        print(f"\n{len(_skipped)} test(s) skipped, which CI does not allow:")
        for nodeid in _skipped:
            print(f"  {nodeid}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole session (harness/postgres.py); each test
    takes a database of its own from `postgres_url`."""
    with running_server() as server:
        yield server


@pytest.fixture
async def postgres_url(postgres_server: PostgresServer) -> str:
    """A new, empty database on the session's server: tests never see each other's rows."""
    return await fresh_database(postgres_server)


@pytest.fixture(params=["sqlite", "postgres"])
async def durable_storage(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """The `storage` block of each durable kind: a SQLite file, or a fresh PostgreSQL
    database (tests that hold for both, e.g. what survives a restart)."""
    if request.param == "postgres":
        url = await fresh_database(request.getfixturevalue("postgres_server"))
        return {"kind": "postgres", "url": url}
    return {"kind": "sqlite", "path": str(tmp_path / "tasks.sqlite3")}
