"""Bad input over JSON-RPC: each gets the protocol's own error (HTTP 200), never a 500, and the
server keeps serving afterwards."""

from __future__ import annotations

from typing import Any

import pytest

from core.storage.memory import InMemoryTaskStore
from tests.conftest import Client, MakeClient, make_settings
from tests.support.wire import V1, call, rpc, user_message

JSON = {"Content-Type": "application/json", **V1}


async def _post_raw(
    client: Client, data: bytes | str, headers: dict[str, str] | None = None
) -> Any:
    response = await client.post("/a2a/jsonrpc", data=data, headers=headers or JSON)
    assert response.status == 200, await response.text()
    return await response.json()


async def _still_serving(client: Client) -> None:
    body = await call(client, "SendMessage", {"message": user_message("echo: alive")})
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize(
    ("raw", "code", "request_id"),
    [
        ("{not json", -32700, None),
        ('[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]', -32600, None),
        ('{"jsonrpc":"1.0","id":7,"method":"GetTask","params":{"id":"x"}}', -32600, 7),
        ('{"jsonrpc":"2.0","id":7,"params":{}}', -32600, 7),
        ('{"jsonrpc":"2.0","id":7,"method":"NoSuchMethod","params":{}}', -32601, 7),
        ('{"jsonrpc":"2.0","id":true,"method":"GetTask","params":{"id":"x"}}', -32600, None),
        ('"just a string"', -32600, None),
        ('{"jsonrpc":"2.0","id":7,"method":"GetTask","params":[1,2]}', -32602, 7),
    ],
)
async def test_envelope_errors(client: Client, raw: str, code: int, request_id: Any) -> None:
    body = await _post_raw(client, raw)
    assert body["jsonrpc"] == "2.0"
    assert body["id"] == request_id
    assert body["error"]["code"] == code
    await _still_serving(client)


async def test_parse_error_has_no_data(client: Client) -> None:
    body = await _post_raw(client, "{")
    assert set(body["error"]) == {"code", "message"}


@pytest.mark.parametrize(
    ("method", "params", "field"),
    [
        (
            "SendMessage",
            {"message": {"messageId": "m", "role": "ROLE_USER", "parts": []}},
            "message.parts",
        ),
        (
            "SendMessage",
            {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"bogus": 1}]}},
            "message.parts.0",
        ),
        (
            "SendMessage",
            {
                "message": {
                    "messageId": "m",
                    "role": "ROLE_USER",
                    "parts": [{"text": "a", "url": "b"}],
                }
            },
            "message.parts.0",
        ),
        (
            "SendMessage",
            {"message": {"messageId": "m", "role": "ROLE_NOPE", "parts": [{"text": "a"}]}},
            "message.role",
        ),
        ("SendMessage", {"message": {"messageId": "m", "parts": [{"text": "a"}]}}, "message.role"),
        ("SendMessage", {"message": "hello"}, "message"),
        ("SendMessage", {}, "message"),
        (
            "SendMessage",
            {"message": user_message("x"), "configuration": {"historyLength": -1}},
            "configuration.historyLength",
        ),
        ("GetTask", {"id": 5}, "id"),
        ("GetTask", {"id": "t", "historyLength": -1}, "historyLength"),
        ("GetTask", {"id": "t", "historyLength": "many"}, "historyLength"),
        ("GetTask", {}, "id"),
        ("ListTasks", {"pageSize": 500}, "pageSize"),
        ("ListTasks", {"pageSize": 0}, "pageSize"),
        ("ListTasks", {"status": "TASK_STATE_BOGUS"}, "status"),
        ("ListTasks", {"pageToken": "%%%"}, "pageToken"),
        ("CancelTask", {"id": ["x"]}, "id"),
        ("SubscribeToTask", {"id": None}, "id"),
    ],
)
async def test_invalid_params(client: Client, method: str, params: Any, field: str) -> None:
    body = await call(client, method, params)
    error = body["error"]
    assert error["code"] == -32602, error
    assert error["data"][0]["reason"] == "INVALID_PARAMS"
    violations = error["data"][1]["fieldViolations"] if len(error["data"]) > 1 else []
    fields = [v["field"] for v in violations] or ["pageToken"]
    assert any(f.startswith(field) or f.replace("_", "") == field for f in fields), fields
    await _still_serving(client)


async def test_snake_case_and_numeric_enums_are_accepted(client: Client) -> None:
    body = await call(
        client,
        "SendMessage",
        {
            "message": {
                "message_id": "m",
                "role": 1,
                "parts": [{"text": "echo: snake"}],
                "unknownField": 3,
            }
        },
    )
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_wrong_content_type(client: Client) -> None:
    body = await _post_raw(
        client, b'{"jsonrpc":"2.0","id":1,"method":"GetTask"}', {"Content-Type": "text/plain", **V1}
    )
    assert body["error"]["code"] == -32005
    assert body["error"]["data"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"
    await _still_serving(client)


async def test_non_json_body_with_text_plain_is_content_type_error(client: Client) -> None:
    body = await _post_raw(client, b"hello", {"Content-Type": "text/plain", **V1})
    assert body["error"]["code"] == -32005


async def test_oversized_body(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"maxBodyBytes": 2048}))
    big = {"message": user_message("echo: " + "x" * 4096)}
    response = await client.post("/a2a/jsonrpc", json=rpc("SendMessage", big), headers=V1)
    assert response.status == 200
    body = await response.json()
    assert body["error"]["code"] == -32600
    assert "too large" in body["error"]["message"]
    await _still_serving(client)


async def test_unknown_exception_is_opaque(make_client: MakeClient) -> None:
    class FaultyStore(InMemoryTaskStore):
        async def get(self, principal: str, task_id: str) -> Any:
            raise RuntimeError("secret detail")

    client = await make_client(store=FaultyStore())
    body = await call(client, "GetTask", {"id": "t"})
    error = body["error"]
    assert error["code"] == -32603
    assert error["message"].startswith("Internal error (error_id ")
    assert "secret" not in str(body)
    await _still_serving(client)


async def test_debug_errors_shows_exception_text(make_client: MakeClient) -> None:
    class FaultyStore(InMemoryTaskStore):
        async def get(self, principal: str, task_id: str) -> Any:
            raise RuntimeError("secret detail")

    client = await make_client(make_settings(server={"debugErrors": True}), store=FaultyStore())
    body = await call(client, "GetTask", {"id": "t"})
    assert "RuntimeError: secret detail" in body["error"]["message"]
