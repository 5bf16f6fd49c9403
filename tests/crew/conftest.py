"""Crew tests: real daemon apps (create_app + CrewBackend) on 127.0.0.1, driven by the crew.

`start_agent` serves one daemon and returns its base URL; `start_v03_only` puts a v0.3-only
front in front of a daemon (see `V03OnlyProxy`); `crew` runs a job in the test's event loop.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from examples.crew.ledger.ledger import Ledger
from examples.crew.plan.plan import Plan, parse_plan
from examples.crew.run.job import JobResult, run_job
from examples.crew.show.events import Asker, NobodyAsker, NullObserver, Observer
from tests.conftest import make_settings
from tests.crew.agents import CrewBackend

MakeServer = Callable[..., Awaitable[TestServer]]
StartAgent = Callable[..., Awaitable[str]]

# Methods of the v0.3 JSON-RPC dialect (a2a-protocol.md §1.2).
V03_METHODS = frozenset(
    {
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
    }
)


class V03OnlyProxy:
    """An agent that speaks A2A v0.3 only, JSON-RPC binding: a front on a real daemon.

    Its card is a v0.3 card (`url`, `preferredTransport`, `protocolVersion` 0.3.0, and no
    `supportedInterfaces`), as a v0.3 server publishes it. Its endpoint refuses every v1.0
    request (a v1.0 method name, or an `A2A-Version` header of 1.x) with JSON-RPC -32601, as a
    v0.3 server would, and forwards the rest unchanged. `methods` records what clients called.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.methods: list[str] = []
        self.versions: list[str | None] = []
        self.refused: list[str] = []
        self.authorizations: list[str | None] = []
        self.url = ""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_get("/.well-known/agent-card.json", self.card)
        app.router.add_post("/a2a/jsonrpc", self.rpc)
        return app

    async def card(self, request: web.Request) -> web.Response:
        self.authorizations.append(request.headers.get("Authorization"))
        card_url = f"{self.upstream}/.well-known/agent-card.json"
        async with aiohttp.ClientSession() as http, http.get(card_url) as response:
            doc = await response.json()
        base = f"{request.scheme}://{request.host}"
        legacy = {
            key: doc[key]
            for key in ("name", "description", "version", "capabilities", "skills")
            if key in doc
        }
        legacy["capabilities"] = {
            k: v for k, v in doc["capabilities"].items() if k in ("streaming", "pushNotifications")
        }
        legacy.update(
            url=f"{base}/a2a/jsonrpc",
            preferredTransport="JSONRPC",
            protocolVersion="0.3.0",
            additionalInterfaces=[],
            defaultInputModes=doc["defaultInputModes"],
            defaultOutputModes=doc["defaultOutputModes"],
        )
        return web.json_response(legacy)

    async def rpc(self, request: web.Request) -> web.StreamResponse:
        body = await request.read()
        method = str(json.loads(body).get("method"))
        version = request.headers.get("A2A-Version")
        self.authorizations.append(request.headers.get("Authorization"))
        self.methods.append(method)
        self.versions.append(version)
        if method not in V03_METHODS or (version or "0.3").startswith("1"):
            self.refused.append(method)
            error = {"code": -32601, "message": "Method not found"}
            return web.json_response({"jsonrpc": "2.0", "id": None, "error": error})
        headers = {"Content-Type": "application/json"}
        target = f"{self.upstream}/a2a/jsonrpc"
        async with (
            aiohttp.ClientSession() as http,
            http.post(target, data=body, headers=headers) as upstream,
        ):
            response = web.StreamResponse(
                status=upstream.status,
                headers={"Content-Type": upstream.headers.get("Content-Type", "")},
            )
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response


@pytest.fixture
def start_agent(aiohttp_server: MakeServer) -> StartAgent:
    async def start(backend: CrewBackend, name: str = "crew agent", **settings: Any) -> str:
        app = create_app(
            make_settings(agentCard={"name": name}, **settings),
            backend=backend,
            store=InMemoryTaskStore(),
        )
        server = await aiohttp_server(app)
        return str(server.make_url("")).rstrip("/")

    return start


@pytest.fixture
def start_v03_only(aiohttp_server: MakeServer) -> Callable[[str], Awaitable[V03OnlyProxy]]:
    async def start(upstream: str) -> V03OnlyProxy:
        proxy = V03OnlyProxy(upstream)
        server = await aiohttp_server(proxy.app())
        proxy.url = str(server.make_url("")).rstrip("/")
        return proxy

    return start


@pytest.fixture
async def ledger(tmp_path: Path) -> AsyncIterator[Ledger]:
    async with Ledger.opened(tmp_path / "crew.sqlite3") as book:
        yield book


def plan_of(agents: dict[str, str], steps: list[dict[str, Any]], **extra: Any) -> Plan:
    """A plan whose agents are base URLs (`{"writer": url}`)."""
    doc = {"agents": {n: {"card": u} for n, u in agents.items()}, "steps": steps, **extra}
    return parse_plan(doc, {})


RunCrew = Callable[..., Awaitable[JobResult]]


@pytest.fixture
def crew(ledger: Ledger) -> RunCrew:
    async def run(
        plan: Plan,
        job_input: str | None = "the input",
        *,
        job_id: str = "job-1",
        asker: Asker | None = None,
        observer: Observer | None = None,
    ) -> JobResult:
        return await run_job(
            plan,
            ledger,
            job_id,
            job_input,
            asker=asker or NobodyAsker(),
            observer=observer or NullObserver(),
        )

    return run
