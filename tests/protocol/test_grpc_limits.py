"""The gRPC binding's limits: `server.maxBodyBytes` caps a request message, and
`server.maxConnections` caps the calls in flight (HTTP/2 multiplexes calls on a connection)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from aiohttp.test_utils import TestClient

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from tests.conftest import make_settings
from tests.support.grpc_status import error_reason
from tests.support.scripted import ScriptedBackend

V1 = (("a2a-version", "1.0"),)


@pytest.fixture
def serve_grpc(
    aiohttp_client: Callable[..., Awaitable[TestClient[Any, Any]]], backend: ScriptedBackend
) -> Callable[..., Awaitable[Any]]:
    async def serve(*, session: dict[str, Any] | None = None, **server: Any) -> Any:
        settings = make_settings(server={"grpcPort": 0, **server}, session=session or {})
        app = create_app(settings, backend=backend, store=InMemoryTaskStore())
        http = await aiohttp_client(app)
        card = await (await http.get("/.well-known/agent-card.json")).json()
        address = next(
            i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"
        )
        channel = grpc.aio.insecure_channel(address)
        return channel, a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]  # generated code

    return serve


@pytest.fixture
async def closing() -> AsyncIterator[list[grpc.aio.Channel]]:
    channels: list[grpc.aio.Channel] = []
    yield channels
    for channel in channels:
        await channel.close()


def _send(text: str, *, now: bool = False) -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=text[:8], role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text=text)]
        ),
        configuration=a2a_pb2.SendMessageConfiguration(return_immediately=now),
    )


async def test_a_request_message_over_max_body_bytes_is_refused(
    serve_grpc: Callable[..., Awaitable[Any]], closing: list[grpc.aio.Channel]
) -> None:
    channel, stub = await serve_grpc(maxBodyBytes=2048)
    closing.append(channel)
    ok = await stub.SendMessage(_send("echo: small"), metadata=V1)
    assert ok.task.status.state == a2a_pb2.TASK_STATE_COMPLETED
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.SendMessage(_send("echo: " + "x" * 4096), metadata=V1)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED


async def test_calls_in_flight_are_capped_by_max_connections(
    serve_grpc: Callable[..., Awaitable[Any]],
    closing: list[grpc.aio.Channel],
    backend: ScriptedBackend,
) -> None:
    channel, stub = await serve_grpc(maxConnections=1)
    closing.append(channel)
    task = (await stub.SendMessage(_send("block", now=True), metadata=V1)).task
    await backend.entered(task.id).wait()
    watch = stub.SubscribeToTask(a2a_pb2.SubscribeToTaskRequest(id=task.id), metadata=V1)
    first = await watch.read()
    assert first.task.id == task.id  # one call in flight now

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.GetTask(a2a_pb2.GetTaskRequest(id=task.id), metadata=V1)
    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED

    backend.release(task.id)
    rest = []
    while (event := await watch.read()) is not grpc.aio.EOF:
        rest.append(event)
    assert rest[-1].status_update.status.state == a2a_pb2.TASK_STATE_COMPLETED
    done = await stub.GetTask(a2a_pb2.GetTaskRequest(id=task.id), metadata=V1)
    assert done.status.state == a2a_pb2.TASK_STATE_COMPLETED


async def test_a_full_context_queue_is_resource_exhausted_with_the_tables_error_info(
    serve_grpc: Callable[..., Awaitable[Any]],
    closing: list[grpc.aio.Channel],
    backend: ScriptedBackend,
) -> None:
    channel, stub = await serve_grpc(session={"maxQueuedTurns": 1})
    closing.append(channel)
    # One turn runs and one (session.maxQueuedTurns) waits behind it.
    running = (await stub.SendMessage(_in_context("block", now=True), metadata=V1)).task
    await backend.entered(running.id).wait()
    await stub.SendMessage(_in_context("echo: queued", now=True), metadata=V1)

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await stub.SendMessage(_in_context("echo: one too many"), metadata=V1)
    backend.release(running.id)

    assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "queued" in str(refused.value.details())
    assert error_reason(refused.value) == "UNSUPPORTED_OPERATION"


def _in_context(text: str, *, now: bool = False) -> a2a_pb2.SendMessageRequest:
    request = _send(text, now=now)
    request.message.context_id = "ctx-full"
    return request
