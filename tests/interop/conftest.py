"""The official a2a-sdk client (a test-time oracle) against the real daemon app on 127.0.0.1."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import httpx
import pytest
from a2a.client import A2ACardResolver, BaseClient, Client, ClientConfig
from a2a.client.transports import GrpcTransport, JsonRpcTransport, RestTransport
from a2a.compat.v0_3.grpc_transport import CompatGrpcTransport
from a2a.compat.v0_3.jsonrpc_transport import CompatJsonRpcTransport
from a2a.compat.v0_3.rest_transport import CompatRestTransport
from a2a.types import AgentCard, Message, Part, Role, StreamResponse
from aiohttp.test_utils import TestServer

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from tests.conftest import make_settings
from tests.support.scripted import ScriptedBackend

MODES = ["v10-jsonrpc", "v10-rest", "v10-grpc", "v03-jsonrpc", "v03-rest", "v03-grpc"]
TRANSPORTS: dict[str, Any] = {
    "v10-jsonrpc": JsonRpcTransport,
    "v10-rest": RestTransport,
    "v10-grpc": GrpcTransport,
    "v03-jsonrpc": CompatJsonRpcTransport,
    "v03-rest": CompatRestTransport,
    "v03-grpc": CompatGrpcTransport,
}
BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}

MakeSdk = Callable[..., Awaitable[Client]]


def user_msg(text: str, task_id: str = "", context_id: str = "") -> Message:
    return Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        task_id=task_id,
        context_id=context_id,
        parts=[Part(text=text)],
    )


async def collect(events: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [event async for event in events]


@pytest.fixture
async def base_url(
    aiohttp_server: Callable[..., Awaitable[TestServer]], backend: ScriptedBackend
) -> str:
    # gRPC on a free port: the card lists it, so every mode finds its interface there.
    settings = make_settings(server={"grpcPort": 0})
    app = create_app(settings, backend=backend, store=InMemoryTaskStore())
    server = await aiohttp_server(app)
    return str(server.make_url("")).rstrip("/")


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


@pytest.fixture
async def card(base_url: str, http: httpx.AsyncClient) -> AgentCard:
    return await A2ACardResolver(http, base_url).get_agent_card()


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def sdk(card: AgentCard, mode: str) -> MakeSdk:
    async def make(*, streaming: bool = True) -> Client:
        version, _, binding_name = mode.partition("-")
        binding = BINDINGS[binding_name]
        want = "1.0" if version == "v10" else "0.3"
        iface = next(
            i
            for i in card.supported_interfaces
            if i.protocol_binding == binding and i.protocol_version.startswith(want)
        )
        if binding == "GRPC":
            # The gRPC transports send `a2a-version` metadata themselves.
            channel = grpc.aio.insecure_channel(iface.url)
            config = ClientConfig(streaming=streaming, supported_protocol_bindings=[binding])
            return BaseClient(card, config, TRANSPORTS[mode](channel, card), [])
        # A fresh httpx client per SDK client: the v1.0 transports need the version header set.
        http = httpx.AsyncClient(timeout=30, headers={"A2A-Version": want})
        transport = TRANSPORTS[mode](http, card, iface.url)
        config = ClientConfig(
            streaming=streaming, httpx_client=http, supported_protocol_bindings=[binding]
        )
        return BaseClient(card, config, transport, [])

    return make
