"""Bytes the gRPC binding cannot decode: refused UNAUTHENTICATED to a caller without a valid
token (before anything is decoded), then INVALID_ARGUMENT with the error table's ErrorInfo,
never the parser's words; each logged, as are unknown methods."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import grpc
import pytest
from aiohttp.test_utils import TestClient
from structlog.testing import capture_logs

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from tests.conftest import make_settings
from tests.support.grpc_status import error_reason
from tests.support.scripted import ScriptedBackend

TOKEN = "grpc-bad-input-token-0123456789"  # noqa: S105 - the test's own token
AUTHED = (("a2a-version", "1.0"), ("authorization", f"Bearer {TOKEN}"))
SEND = "/lf.a2a.v1.A2AService/SendMessage"
GET = "/lf.a2a.v1.A2AService/GetTask"
LEAKS = ("DecodeError", "Error parsing", "lf.a2a", "google.protobuf", "Unexpected", "class")


def _field(number: int, payload: bytes) -> bytes:
    """A length-delimited field (wire type 2); payloads here stay under 2**21 bytes."""
    size, length = len(payload), b""
    while True:
        byte = size & 0x7F
        size >>= 7
        length += bytes([byte | (0x80 if size else 0)])
        if not size:
            return bytes([number << 3 | 2]) + length + payload


def _deep_struct(depth: int) -> bytes:
    """A SendMessageRequest whose `metadata` Struct nests `depth` Structs (built as bytes: the
    library itself refuses to build one this deep)."""
    struct = b""
    for _ in range(depth):
        value = _field(5, struct)  # Value.struct_value
        entry = _field(1, b"a") + _field(2, value)  # map entry: key, value
        struct = _field(1, entry)  # Struct.fields
    return _field(4, struct)  # SendMessageRequest.metadata


UNDECODABLE = {
    "not protobuf": (SEND, b"\x0f\xff\xff\xff"),
    "truncated varint": (SEND, b"\x18\xff\xff"),
    "nested past the parser's depth": (SEND, _deep_struct(200)),
    "invalid UTF-8": (GET, _field(2, b"task-\xff\xfe")),
}


@pytest.fixture
async def grpc_address(
    aiohttp_client: Callable[..., Awaitable[TestClient[Any, Any]]], backend: ScriptedBackend
) -> str:
    settings = make_settings(
        server={
            "grpcPort": 0,
            "maxBodyBytes": 65536,
            "auth": {"tokens": [{"token": TOKEN, "principal": "tester"}]},
        }
    )
    app = create_app(settings, backend=backend, store=InMemoryTaskStore())
    http = await aiohttp_client(app)
    card = await (
        await http.get("/.well-known/agent-card.json", headers={"Authorization": f"Bearer {TOKEN}"})
    ).json()
    return str(
        next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
    )


@pytest.fixture
async def channel(grpc_address: str) -> AsyncIterator[grpc.aio.Channel]:
    async with grpc.aio.insecure_channel(grpc_address) as opened:
        yield opened


async def _raw_call(
    channel: grpc.aio.Channel, method: str, body: bytes, metadata: tuple[tuple[str, str], ...]
) -> grpc.aio.AioRpcError:
    call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(method)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await call(body, metadata=metadata)
    return refused.value


@pytest.mark.parametrize("case", sorted(UNDECODABLE))
async def test_undecodable_bytes_are_unauthenticated_without_a_token(
    channel: grpc.aio.Channel, case: str
) -> None:
    method, body = UNDECODABLE[case]
    for metadata in ((("a2a-version", "1.0"),), (("authorization", "Bearer wrong"),)):
        error = await _raw_call(channel, method, body, metadata)
        assert error.code() == grpc.StatusCode.UNAUTHENTICATED, error
        assert not any(leak in str(error.details()) for leak in LEAKS), error.details()


@pytest.mark.parametrize("case", sorted(UNDECODABLE))
async def test_undecodable_bytes_are_invalid_argument_with_the_tables_error_info(
    channel: grpc.aio.Channel, case: str
) -> None:
    method, body = UNDECODABLE[case]
    with capture_logs() as logs:
        error = await _raw_call(channel, method, body, AUTHED)

    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT, error
    assert error_reason(error) == "PARSE_ERROR"
    assert not any(leak in str(error.details()) for leak in LEAKS), error.details()
    assert [e for e in logs if e["event"] == "grpc.undecodable_request"], logs


async def test_unknown_methods_are_logged(channel: grpc.aio.Channel) -> None:
    with capture_logs() as logs:
        unknown = await _raw_call(channel, "/lf.a2a.v1.A2AService/NoSuchMethod", b"", AUTHED)

    assert unknown.code() == grpc.StatusCode.UNIMPLEMENTED
    (logged,) = [e for e in logs if e["event"] == "grpc.unknown_method"]
    assert logged["method"] == "/lf.a2a.v1.A2AService/NoSuchMethod"
