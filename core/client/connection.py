"""One A2A agent as the official SDK's client reaches it: its card decides the protocol version
(v1.0 or v0.3) and the binding (JSON-RPC, HTTP+JSON, gRPC), unless the caller narrows them;
a bearer token goes with every call; SDK, HTTP and gRPC failures become `ClientError`s."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass

import grpc
import httpx
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import AgentCard, AgentInterface
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict

from core.client import control
from core.client.access import AgentInfo, ClientError

BINDINGS = {"jsonrpc": "JSONRPC", "rest": "HTTP+JSON", "grpc": "GRPC"}
CALL_TIMEOUT = 60.0


@dataclass(frozen=True)
class AgentRef:
    """An agent to reach: a name to call it by, its base URL (where its card is), a token."""

    name: str
    url: str
    token: str | None = None
    binding: str | None = None
    """`jsonrpc`, `rest` or `grpc`: only this binding of the card (default: the card's order)."""
    protocol: str | None = None
    """`1.0` or `0.3`: only interfaces of this version (default: the newest the card offers)."""


@contextmanager
def translated(what: str) -> Iterator[None]:
    """Foreign failures of a call as one `ClientError` naming what was being done."""
    try:
        yield
    except ClientError:
        raise
    except A2AError as exc:
        raise ClientError(f"{what}: {_reason(exc)}") from exc
    except grpc.aio.AioRpcError as exc:
        raise ClientError(f"{what}: {exc.code().name}: {exc.details()}") from exc
    except httpx.HTTPStatusError as exc:
        raise ClientError(f"{what}: HTTP {exc.response.status_code}") from exc
    except (httpx.HTTPError, OSError) as exc:
        raise ClientError(f"{what}: cannot connect ({type(exc).__name__}: {exc})") from exc


def _reason(exc: A2AError) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, A2AClientError) and "401" in text:
        return "unauthorized (give a token with --token or A2A_TOKEN)"
    return text


class Connection:
    """An open connection to one agent (its card read, an HTTP client and its headers ready).
    `client()` makes an SDK client for one call or stream; use as an async context manager."""

    def __init__(self, ref: AgentRef, card: AgentCard, http: httpx.AsyncClient) -> None:
        self.ref = ref
        self.card = card
        self._http = http
        self.interface = _choose(card, ref)

    @classmethod
    async def open(cls, ref: AgentRef) -> Connection:
        headers = {"Authorization": f"Bearer {ref.token}"} if ref.token else {}
        http = httpx.AsyncClient(timeout=httpx.Timeout(CALL_TIMEOUT, read=None), headers=headers)
        try:
            with translated(f"cannot read the agent card at {ref.url}"):
                card = await A2ACardResolver(http, ref.url.rstrip("/")).get_agent_card()
            return cls(ref, card, http)
        except BaseException:
            await http.aclose()
            raise

    async def aclose(self) -> None:
        await self._http.aclose()

    def call_context(self) -> ClientCallContext | None:
        if not self.ref.token:
            return None
        return ClientCallContext(service_parameters={"authorization": f"Bearer {self.ref.token}"})

    @asynccontextmanager
    async def client(self, *, streaming: bool = True) -> AsyncIterator[Client]:
        """An SDK client on the chosen interface (closed after use; the HTTP client stays)."""
        card = AgentCard()
        card.CopyFrom(self.card)
        del card.supported_interfaces[:]
        card.supported_interfaces.append(self.interface)
        config = ClientConfig(
            streaming=streaming,
            httpx_client=self._http,
            supported_protocol_bindings=[self.interface.protocol_binding],
            grpc_channel_factory=grpc.aio.insecure_channel,
        )
        with translated(f"cannot use the agent at {self.ref.url}"):
            client = ClientFactory(config).create(card)
        try:
            yield client
        finally:
            await client.close()

    def info(self) -> AgentInfo:
        card = self.card
        skills = tuple(
            {
                "id": s.id,
                "name": s.name,
                "description": s.description,
                "tags": list(s.tags),
                "examples": list(s.examples),
            }
            for s in card.skills
        )
        return AgentInfo(
            name=self.ref.name,
            url=self.ref.url,
            description=card.description,
            skills=skills,
            protocol=self.interface.protocol_version,
            binding=self.interface.protocol_binding,
            streaming=card.capabilities.streaming,
            control=control.record_of({"capabilities": MessageToDict(card.capabilities)}),
        )


def _choose(card: AgentCard, ref: AgentRef) -> AgentInterface:
    """The card's interface to use: the first binding the card lists (or the one asked for),
    at the newest version it offers for that binding (or the one asked for)."""
    wanted = BINDINGS.get(ref.binding or "", ref.binding)
    usable = [
        i
        for i in card.supported_interfaces
        if i.protocol_binding in BINDINGS.values()
        and (wanted is None or i.protocol_binding == wanted)
        and (ref.protocol is None or _version(i) == ref.protocol)
    ]
    if not usable:
        offered = ", ".join(
            f"{i.protocol_binding} {i.protocol_version or '?'}" for i in card.supported_interfaces
        )
        raise ClientError(
            f"the agent at {ref.url} offers no interface we can use"
            f"{f' with binding {ref.binding}' if ref.binding else ''}"
            f"{f' at version {ref.protocol}' if ref.protocol else ''} (it offers: {offered})"
        )
    binding = usable[0].protocol_binding
    same = [i for i in usable if i.protocol_binding == binding]
    return max(same, key=lambda i: _version(i) == "1.0")


def _version(interface: AgentInterface) -> str:
    """`1.0.0`, `1.0` -> `1.0`; `0.3.0` -> `0.3` (patch versions never matter)."""
    return ".".join((interface.protocol_version or "1.0").split(".")[:2])
