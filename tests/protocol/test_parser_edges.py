"""JSON the daemon must refuse (issue 17, item 5), on both bindings and both versions.

Deep nesting, lone UTF-16 surrogates, NaN/Infinity and numbers that overflow to infinity are a
Parse error (-32700 on JSON-RPC, 400 with a google.rpc Status on REST), never a 500 or -32603,
and nothing the daemon answers is anything but strict JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from tests.conftest import Client
from tests.support.wire import V1, call, user_message


@dataclass(frozen=True)
class Target:
    """One way to send a message: a binding, a protocol version and a method."""

    name: str
    path: str
    headers: dict[str, str]
    method: str | None = None  # JSON-RPC method; None for REST
    v03: bool = False

    def body(self, metadata_value: str) -> bytes:
        """A message whose metadata holds `metadata_value`, a raw JSON text."""
        if self.v03:
            part, role = '{"kind":"text","text":"echo: hi"}', "user"
        else:
            part, role = '{"text":"echo: hi"}', "ROLE_USER"
        message = (
            f'{{"messageId":"m-1","role":"{role}","parts":[{part}],'
            f'"metadata":{{"x":{metadata_value}}}}}'
        )
        if self.method is None:
            return f'{{"message":{message}}}'.encode()
        return (
            f'{{"jsonrpc":"2.0","id":9,"method":"{self.method}","params":{{"message":{message}}}}}'
        ).encode()


TARGETS = [
    Target("jsonrpc-v1-send", "/a2a/jsonrpc", V1, "SendMessage"),
    Target("jsonrpc-v1-stream", "/a2a/jsonrpc", V1, "SendStreamingMessage"),
    Target("jsonrpc-v03-send", "/a2a/jsonrpc", {}, "message/send", v03=True),
    Target("jsonrpc-v03-stream", "/a2a/jsonrpc", {}, "message/stream", v03=True),
    Target("rest-v1-send", "/a2a/rest/message:send", V1),
    Target("rest-v1-stream", "/a2a/rest/message:stream", V1),
    Target("rest-v03-send", "/a2a/rest/v1/message:send", {}, v03=True),
    Target("rest-v03-stream", "/a2a/rest/v1/message:stream", {}, v03=True),
]

REFUSED = {
    "nan": "NaN",
    "infinity": "Infinity",
    "minus-infinity": "-Infinity",
    "overflow": "1e309",
    "minus-overflow": "-1e309",
    "lone-high-surrogate": '"\\ud800"',
    "lone-low-surrogate": '"a\\udc00b"',
    "reversed-pair": '"\\udc00\\ud800"',
    "surrogate-key": '{"\\ud800":1}',
    "nested-100000": "[" * 100_000 + "]" * 100_000,
    "nested-200": '{"a":' * 200 + "1" + "}" * 200,
}


def strict(text: str) -> Any:
    """Parse as a strict JSON client would: NaN and Infinity are not JSON."""

    def refuse(name: str) -> Any:
        raise AssertionError(f"the daemon sent {name}")

    return json.loads(text, parse_constant=refuse)


async def _post(client: Client, target: Target, body: bytes) -> tuple[int, Any]:
    headers = {**target.headers, "Content-Type": "application/json"}
    response = await client.post(target.path, data=body, headers=headers)
    text = await response.text()
    assert response.content_type == "application/json", text
    return response.status, strict(text)


def _assert_parse_error(target: Target, status: int, body: Any) -> None:
    if target.method is not None:
        assert status == 200
        assert body["jsonrpc"] == "2.0"
        assert body["id"] is None
        assert body["error"]["code"] == -32700, body
        assert body["error"]["message"].startswith("Invalid JSON payload: ")
        assert "error_id" not in body["error"]["message"]
    else:
        assert status == 400, body
        error = body["error"]
        assert error["code"] == 400
        assert error["status"] == "INVALID_ARGUMENT"
        assert error["details"][0]["reason"] == "PARSE_ERROR", error
        assert error["message"].startswith("Invalid JSON payload: ")


async def _still_serving(client: Client) -> None:
    body = await call(client, "SendMessage", {"message": user_message("echo: alive")})
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
@pytest.mark.parametrize("value", REFUSED.values(), ids=list(REFUSED))
async def test_refused_json(client: Client, target: Target, value: str) -> None:
    status, body = await _post(client, target, target.body(value))
    _assert_parse_error(target, status, body)
    await _still_serving(client)


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
@pytest.mark.parametrize(
    "raw",
    [b'{"message": "\xed\xa0\x80"}', b'{"message": "\xff"}', '{"message":"é"}'.encode("utf-16")],
    ids=["encoded-surrogate", "invalid-byte", "utf-16"],
)
async def test_refused_bytes(client: Client, target: Target, raw: bytes) -> None:
    """Bodies are UTF-8 (RFC 8259 §8.1); surrogates encoded as bytes are not UTF-8 either."""
    body = raw
    if target.method is not None:
        envelope = '{"jsonrpc":"2.0","id":9,"method":"%s","params":' % target.method  # noqa: UP031 - bytes around it
        body = envelope.encode() + raw + b"}"
    status, answer = await _post(client, target, body)
    _assert_parse_error(target, status, answer)


@pytest.mark.parametrize(
    "target", [t for t in TARGETS if "stream" not in t.name], ids=lambda t: t.name
)
@pytest.mark.parametrize(
    ("value", "echoed"),
    [
        ('"\\ud83d\\ude00"', "\U0001f600"),
        ("1e308", 1e308),
        ("1e-400", 0.0),
        ("-0.0", -0.0),
        ("[" * 80 + "]" * 80, json.loads("[" * 80 + "]" * 80)),
        ('"\\\\ud800"', "\\ud800"),
    ],
    ids=["surrogate-pair", "largest", "underflow", "minus-zero", "nested-80", "escaped-backslash"],
)
async def test_accepted_edges(client: Client, target: Target, value: str, echoed: Any) -> None:
    """What strict JSON allows is still accepted: the limits are not too tight."""
    status, body = await _post(client, target, target.body(value))
    assert status == 200, body
    result = body["result"] if target.method else body
    task = result.get("task", result)
    assert task["status"]["state"] in ("completed", "TASK_STATE_COMPLETED"), body
    history = task["history"]
    assert history[0]["metadata"]["x"] == echoed
