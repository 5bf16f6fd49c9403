"""Per-request negotiation: versions and required extensions, in every binding."""

from __future__ import annotations

import pytest

from core.client.control import URI as CONTROL_URI
from tests.conftest import Client, MakeClient, make_settings
from tests.support.wire import V1, call, user_message

EXT = "https://example.com/ext/needed/v1"


@pytest.fixture
async def ext_client(make_client: MakeClient) -> Client:
    settings = make_settings(agentCard={"extensions": [{"uri": EXT, "required": True}]})
    return await make_client(settings)


async def test_required_extension_missing(ext_client: Client) -> None:
    body = await call(ext_client, "GetTask", {"id": "x"})
    assert body["error"]["code"] == -32008
    assert body["error"]["data"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"
    legacy = await call(ext_client, "tasks/get", {"id": "x"}, headers={})
    assert legacy["error"]["code"] == -32600
    rest = await ext_client.get("/a2a/rest/tasks/x", headers=V1)
    assert rest.status == 400
    assert (await rest.json())["error"]["details"][0]["reason"] == "EXTENSION_SUPPORT_REQUIRED"


@pytest.mark.parametrize("header", ["A2A-Extensions", "X-A2A-Extensions"])
async def test_required_extension_requested(ext_client: Client, header: str) -> None:
    body = await call(ext_client, "GetTask", {"id": "x"}, headers={**V1, header: f"a, {EXT}"})
    assert body["error"]["code"] == -32001


async def test_card_declares_extensions(ext_client: Client) -> None:
    card = await (await ext_client.get("/.well-known/agent-card.json")).json()
    extensions = card["capabilities"]["extensions"]
    assert extensions[0] == {"uri": EXT, "required": True}
    # Then ours, which no client needs to know (docs/extensions/conversation-control.md).
    assert [(e["uri"], e["required"]) for e in extensions[1:]] == [(CONTROL_URI, False)]


@pytest.mark.parametrize(
    ("header", "code"),
    [
        ("1.0", -32001),
        ("1.0.3", -32001),
        ("1.1", -32009),
        ("0.3", -32009),
        ("", -32009),
        ("abc", -32009),
    ],
)
async def test_version_matrix_v1_method(client: Client, header: str, code: int) -> None:
    body = await call(client, "GetTask", {"id": "x"}, headers={"A2A-Version": header})
    assert body["error"]["code"] == code


async def test_version_query_parameter(client: Client) -> None:
    body = await call(
        client, "GetTask", {"id": "x"}, headers={}, path="/a2a/jsonrpc?A2A-Version=1.0"
    )
    assert body["error"]["code"] == -32001


@pytest.mark.parametrize(("header", "code"), [("0.3", -32001), ("0.3.0", -32001), ("1.0", -32603)])
async def test_version_matrix_v03_method(client: Client, header: str, code: int) -> None:
    body = await call(client, "tasks/get", {"id": "x"}, headers={"A2A-Version": header})
    assert body["error"]["code"] == code


async def test_v03_send_then_v1_list_sees_it(client: Client) -> None:
    message = {
        "kind": "message",
        "messageId": "o",
        "role": "user",
        "parts": [{"kind": "text", "text": "echo: x"}],
        "contextId": "shared",
    }
    await call(client, "message/send", {"message": message}, headers={})
    listed = await call(client, "ListTasks", {"contextId": "shared"})
    assert listed["result"]["totalSize"] == 1
    assert user_message("x")["role"] == "ROLE_USER"
