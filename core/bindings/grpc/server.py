"""The gRPC server: both A2A services on `server.grpcPort`, one `grpc.aio` server on the
daemon's own event loop.

Every RPC goes the way an HTTP request does: the bearer token in the `authorization` metadata
names the principal (UNAUTHENTICATED without one, when tokens are configured), `a2a-version`
metadata is checked against the service's version (missing = 0.3, §3.6), required extensions
against `a2a-extensions`; only then is the request message decoded (the handlers take the raw
bytes, so a caller without a token learns nothing from the parser, and bytes that do not
decode are a ParseError from the error table, INVALID_ARGUMENT, logged), and the RPC's row of
the one method table (core/api/methods.py) runs with the service's protobuf codec
(`codecs.py`), as the JSON bindings run it with theirs. Calls of unknown methods
are logged too (rate-limited). Errors leave as `google.rpc.Status` (`status.py`); a streaming
RPC that fails after its first message ends with that status.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import grpc
import structlog
from anyio.abc import TaskStatus
from google.protobuf.descriptor import MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.protobuf.message_factory import GetMessageClass

from core.api.calls import Call, Streaming
from core.api.card import CardProvider, CardView
from core.api.errors import as_daemon_error
from core.api.host import Host
from core.api.methods import METHODS, Method
from core.api.negotiation import check_extension_values
from core.api.operations import Operations
from core.api.principals import Principals
from core.api.ratelog import LogSummary
from core.bindings.grpc import codecs
from core.bindings.grpc.protos import V03_SERVICE, V1_SERVICE
from core.bindings.grpc.status import rpc_status
from core.engine.startup import ListenError, failing_as
from core.settings import Settings
from core.wire.codecs.codec import OperationCodec
from core.wire.errors import Dialect, InternalError, ParseError
from core.wire.versions import parse_version, require

log = structlog.get_logger(__name__)

Context = grpc.aio.ServicerContext[Any, Any]
FINAL_EVENTS_GRACE = 1.0  # s
UNDECODABLE = (
    "The request message could not be decoded: it is not a valid protobuf message of this "
    "method's request type (corrupt or truncated, nested too deep, or text that is not UTF-8)"
)


class _Unauthenticated(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# Each service's RPCs: the rows of the method table, by RPC name. v1.0 names its RPCs after
# the operations; v0.3 has the operations v0.3 has (`Method.v03`), three of them renamed
# (`Method.grpc_v03`).
V1_RPCS = {m.operation: m for m in METHODS}
V03_RPCS = {m.grpc_v03 or m.operation: m for m in METHODS if m.v03 is not None}


@dataclass(frozen=True)
class _Method:
    name: str
    descriptor: MethodDescriptor
    row: Method
    codec: OperationCodec
    decode: Callable[[bytes], Message]


class GrpcBinding:
    """The servicer of both services on one `grpc.aio` server (`serve` below runs it)."""

    def __init__(self, settings: Settings, ops: Operations, card: CardProvider) -> None:
        self._settings = settings
        self._ops = ops
        self._card = card
        self._principals = Principals(settings)
        self._server: grpc.aio.Server | None = None
        self._logs = LogSummary()

    # ----- one call ---------------------------------------------------------------------------

    def _call(self, request: bytes, context: Context, method: _Method) -> Call:
        metadata = _metadata(context)
        principal = self._principals.of(_first(metadata, "authorization"))
        if principal is None:
            missing = not metadata.get("authorization")
            raise _Unauthenticated(
                "A bearer token is required" if missing else "The bearer token is not valid"
            )
        require(parse_version(_first(metadata, "a2a-version")), method.codec.version)
        extensions = metadata.get("a2a-extensions", []) + metadata.get("x-a2a-extensions", [])
        check_extension_values(extensions, self._card.required_extensions)
        decoded = self._decoded(request, method)
        view = CardView(self._card, self._card.configured_base_url())
        return Call(self._ops, principal, decoded, view)

    async def _run(self, request: bytes, context: Context, method: _Method) -> object:
        call = self._call(request, context, method)
        if method.row.push:
            # Before the message is read into the models: push operations answer alike while
            # push is off (A2A §3.3.4).
            self._ops.require_push()
        return await method.row.run(call, method.codec)

    def _decoded(self, request: bytes, method: _Method) -> Message:
        """The request message; ParseError when the bytes do not decode (the parser's own
        words go to the log only)."""
        try:
            return method.decode(request)
        except (DecodeError, RecursionError, ValueError) as exc:
            self._logs.note(
                "grpc.undecodable_request",
                key=method.name,
                method=method.name,
                bytes=len(request),
                error=str(exc)[:200],
            )
            raise ParseError(UNDECODABLE) from exc

    async def _abort(self, context: Context, exc: Exception, dialect: Dialect) -> None:
        if isinstance(exc, _Unauthenticated):
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, exc.message)
        error = as_daemon_error(exc, debug=self._settings.server.debug_errors)
        code, message, trailers = rpc_status(error, dialect)
        await context.abort(code, message, trailing_metadata=trailers)

    def _unary(self, method: _Method) -> Callable[[bytes, Context], Any]:
        async def unary(request: bytes, context: Context) -> Message:
            with _logged(method.name, context):
                try:
                    return _single(await self._run(request, context, method))
                except Exception as exc:
                    await self._abort(context, exc, method.codec.dialect)
                    raise  # unreachable: abort raises

        return unary

    def _streaming(self, method: _Method) -> Callable[[bytes, Context], Any]:
        async def streaming(request: bytes, context: Context) -> AsyncIterator[Message]:
            with _logged(method.name, context):
                try:
                    result = await self._run(request, context, method)
                    async for event in _events(result):
                        yield event
                except Exception as exc:  # noqa: BLE001 - every failure becomes a Status
                    await self._abort(context, exc, method.codec.dialect)

        return streaming

    def _service_handler(
        self, service: ServiceDescriptor, rows: Mapping[str, Method], codec: OperationCodec
    ) -> grpc.GenericRpcHandler:
        handlers: dict[str, grpc.RpcMethodHandler[Any, Any]] = {}
        for descriptor in service.methods:
            decode = GetMessageClass(descriptor.input_type).FromString
            method = _Method(descriptor.name, descriptor, rows[descriptor.name], codec, decode)
            # No request_deserializer: the handler gets the bytes and decodes them after auth.
            if descriptor.server_streaming:
                handlers[descriptor.name] = grpc.unary_stream_rpc_method_handler(
                    self._streaming(method), response_serializer=_serialize
                )
            else:
                handlers[descriptor.name] = grpc.unary_unary_rpc_method_handler(
                    self._unary(method), response_serializer=_serialize
                )
        return grpc.method_handlers_generic_handler(service.full_name, handlers)

    # ----- the server -------------------------------------------------------------------------

    async def start(self) -> int:
        """Bind `server.host`:`server.grpcPort` and start serving; returns the bound port."""
        server_settings = self._settings.server
        server = grpc.aio.server(
            options=[
                ("grpc.max_receive_message_length", server_settings.max_body_bytes),
                ("grpc.max_send_message_length", -1),
                ("grpc.max_connection_idle_ms", server_settings.keep_alive_timeout),
                ("grpc.so_reuseport", 0),
            ],
            maximum_concurrent_rpcs=server_settings.max_connections,
        )
        server.add_generic_rpc_handlers(
            (
                self._service_handler(V1_SERVICE, V1_RPCS, codecs.V1),
                self._service_handler(V03_SERVICE, V03_RPCS, codecs.V03),
                _UnknownMethods(self._logs),
            )
        )
        host = server_settings.host
        address = (
            f"[{host}]:{server_settings.grpc_port}"
            if ":" in host
            else (f"{host}:{server_settings.grpc_port}")
        )
        with failing_as(ListenError):
            port = server.add_insecure_port(address)
            await server.start()
        self._server = server
        self._card.grpc_port = port
        log.info("grpc.listening", host=host, port=port)
        return port

    async def stop(self) -> None:
        """Stop accepting RPCs at once and wait for the running ones, then cancel what is left.

        Started together with the service's drain, which waits `server.shutdownTimeout` for
        turns and then fails the rest with a reason: the grace is that plus a second, so those
        final events still reach their streams. Idempotent."""
        if self._server is not None:
            grace = self._settings.server.shutdown_timeout / 1000 + FINAL_EVENTS_GRACE
            await self._server.stop(grace)


class _UnknownMethods(grpc.GenericRpcHandler):
    """Asked last, for a method neither service has: logged (rate-limited), then gRPC answers
    UNIMPLEMENTED."""

    def __init__(self, logs: LogSummary) -> None:
        self._logs = logs

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> None:
        method = str(getattr(handler_call_details, "method", ""))[:200]
        self._logs.note("grpc.unknown_method", method=method)


def _single(result: object) -> Message:
    if not isinstance(result, Message):
        raise InternalError("a unary method answered with a stream or no message")
    return result


def _events(result: object) -> AsyncIterator[Message]:
    if not isinstance(result, Streaming):
        raise InternalError("a streaming method answered with one result")
    events: AsyncIterator[Message] = result.events
    return events


def _serialize(message: Message) -> bytes:
    return message.SerializeToString()


def _metadata(context: Context) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for key, value in context.invocation_metadata() or ():
        text = value.decode("utf-8", "replace") if isinstance(value, bytes) else value
        found.setdefault(key.lower(), []).append(text)
    return found


def _first(metadata: dict[str, list[str]], key: str) -> str | None:
    values = metadata.get(key)
    return values[0] if values else None


@contextmanager
def _logged(method: str, context: Context) -> Iterator[None]:
    """One log line per RPC (how it ended, never its body), under a request_id of its own."""
    started = time.perf_counter()
    with structlog.contextvars.bound_contextvars(request_id=os.urandom(6).hex(), rpc_method=method):
        try:
            yield
        finally:
            code = context.code()
            log.info(
                "grpc.request",
                method=method,
                status=code.name if isinstance(code, grpc.StatusCode) else "OK",
                ms=round((time.perf_counter() - started) * 1000, 1),
            )


async def serve(host: Host, *, task_status: TaskStatus[list[str]]) -> None:
    """The daemon's gRPC binding: both A2A services on `server.grpcPort` until the daemon
    stops; then no new RPCs, and the running ones get `server.shutdownTimeout` (and a
    second) to finish while the daemon drains their turns."""
    binding = GrpcBinding(host.settings, host.ops, host.card)
    port = await binding.start()
    name = host.settings.server.host
    shown = f"[{name}]" if ":" in name else name
    try:
        task_status.started([f"grpc://{shown}:{port}"])
        await host.wait_stopping()
    finally:
        with anyio.CancelScope(shield=True):
            await binding.stop()
