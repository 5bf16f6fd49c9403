"""The client commands and the MCP server run as the user runs them: `a2a-wrapper ...` as a
process, against our daemon's real app (scripted backend) or the a2a-sdk reference server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from aiohttp.test_utils import TestServer

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from tests.conftest import make_settings
from tests.support.daemon import EXE, REPO
from tests.support.scripted import ScriptedBackend

CLI_LIMIT = 120.0


@dataclass(frozen=True)
class Done:
    code: int
    out: str
    err: str


Cli = Callable[..., Awaitable[Done]]
Serve = Callable[..., Awaitable[str]]


@pytest.fixture
def cli() -> Cli:
    """`await cli("send", url, "text", env={...})`: the command's exit code and output."""

    async def run(*args: str, env: dict[str, str] | None = None) -> Done:
        environ = {k: v for k, v in os.environ.items() if k != "A2A_TOKEN"}
        with anyio.fail_after(CLI_LIMIT):
            done = await anyio.run_process(
                [str(EXE), *args], check=False, env={**environ, **(env or {})}, cwd=REPO
            )
        return Done(done.returncode, done.stdout.decode(), done.stderr.decode())

    return run


@pytest.fixture
async def serve(backend: ScriptedBackend) -> AsyncIterator[Serve]:
    """`await serve(**settings)`: our daemon's app (scripted backend, gRPC too) on 127.0.0.1;
    its base URL."""
    servers: list[TestServer] = []

    async def start(**overrides: Any) -> str:
        server_block = {"grpcPort": 0, **overrides.pop("server", {})}
        settings = make_settings(server=server_block, **overrides)
        store = InMemoryTaskStore() if settings.storage.kind == "memory" else None
        app = create_app(settings, backend=backend, store=store)
        server = TestServer(app, host="127.0.0.1")
        await server.start_server()
        servers.append(server)
        return str(server.make_url("")).rstrip("/")

    yield start
    for server in servers:
        await server.close()


@pytest.fixture
async def daemon(serve: Serve) -> str:
    return await serve(approvals={"mode": "ask"})


@pytest.fixture(scope="module")
def reference() -> Iterator[str]:
    """The a2a-sdk 1.3.0 reference server (tests/client/reference_agent.py); its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.client.reference_agent"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("listening on "), line
        yield line.split()[-1]
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()
