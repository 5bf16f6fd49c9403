"""JSON-RPC 2.0 envelope parsing (pure; no I/O)."""

from __future__ import annotations

from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

from core.wire import strict_json
from core.wire.errors import DaemonError, InvalidParamsError, InvalidRequestError, ParseError

RequestId = str | int | None


@dataclass(frozen=True)
class RpcRequest:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True)
class Encoded:
    """A result already encoded as JSON text (`WireModel.dump_json`): put into the reply as it
    is, with no dict built and encoded again."""

    json: bytes


def success_json(request_id: RequestId, result: Encoded) -> bytes:
    return b'{"jsonrpc":"2.0","id":' + _id_json(request_id) + b',"result":' + result.json + b"}"


def _id_json(request_id: RequestId) -> bytes:
    """The id as `strict_json.dumps` writes it (ASCII), without an encoder per reply."""
    if request_id is None:
        return b"null"
    if isinstance(request_id, str):
        return encode_basestring_ascii(request_id).encode()
    return str(request_id).encode()


class EnvelopeError(Exception):
    """The body is not a usable JSON-RPC request; `request_id` is echoed when it was readable."""

    def __init__(self, error: DaemonError, request_id: RequestId = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.request_id = request_id


def parse_request(body: bytes) -> RpcRequest:
    try:
        data = strict_json.loads(body)
    except ParseError as exc:
        raise EnvelopeError(exc) from exc
    if isinstance(data, list):
        raise EnvelopeError(InvalidRequestError("Batch requests are not supported"))
    if not isinstance(data, dict):
        raise EnvelopeError(InvalidRequestError("The request must be a JSON object"))
    raw_id = data.get("id")
    request_id: RequestId = None
    if isinstance(raw_id, str) or (isinstance(raw_id, int) and not isinstance(raw_id, bool)):
        request_id = raw_id
    elif raw_id is not None:
        raise EnvelopeError(InvalidRequestError("id must be a string, a number or null"))
    if data.get("jsonrpc") != "2.0":
        raise EnvelopeError(InvalidRequestError('jsonrpc must be "2.0"'), request_id)
    method = data.get("method")
    if not isinstance(method, str) or not method:
        raise EnvelopeError(InvalidRequestError("method must be a non-empty string"), request_id)
    params = data.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise EnvelopeError(InvalidParamsError("params must be an object"), request_id)
    return RpcRequest(request_id, method, params)


def success(request_id: RequestId, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def failure(request_id: RequestId, error: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": error}
