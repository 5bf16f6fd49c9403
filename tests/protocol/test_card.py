"""The agent card: one document for both generations, caching headers, URL building."""

from __future__ import annotations

from typing import Any

from core.api import conversation_control
from tests.conftest import Client, MakeClient, make_settings

CARD = "/.well-known/agent-card.json"


async def test_card_for_both_generations(client: Client) -> None:
    response = await client.get(CARD)
    assert response.status == 200
    card: dict[str, Any] = await response.json()
    base = f"http://{client.host}:{client.port}"
    assert card["supportedInterfaces"] == [
        {"url": f"{base}/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": f"{base}/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": f"{base}/a2a/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": f"{base}/a2a/rest", "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
    ]
    extensions = card["capabilities"].pop("extensions")
    assert card["capabilities"] == {
        "streaming": True,
        "pushNotifications": False,
        "extendedAgentCard": False,
    }
    assert [e["uri"] for e in extensions] == [conversation_control.URI]
    assert card["url"] == f"{base}/a2a/jsonrpc"
    assert card["preferredTransport"] == "JSONRPC"
    assert card["protocolVersion"] == "0.3.0"
    assert card["additionalInterfaces"] == [{"url": f"{base}/a2a/rest", "transport": "HTTP+JSON"}]
    assert card["supportsAuthenticatedExtendedCard"] is False
    assert card["skills"][0]["id"] == "echo"


async def test_card_lists_the_grpc_interfaces_once_bound(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"grpcPort": 0}))
    card: dict[str, Any] = await (await client.get(CARD)).json()
    grpc = [i for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC"]
    assert [i["protocolVersion"] for i in grpc] == ["1.0", "0.3"]
    address = grpc[0]["url"]
    host, _, port = address.rpartition(":")
    assert (host, grpc[1]["url"]) == (client.host, address)  # host:port, no scheme (A2A §5.2)
    assert int(port) > 0  # the port actually bound, not the configured 0
    # v0.3 interface URLs are http(s) URLs; v0.3 clients take host:port from it.
    assert card["additionalInterfaces"][-1] == {"url": f"http://{address}", "transport": "GRPC"}


async def test_v1_request_or_setting_gets_strict_card(
    client: Client, make_client: MakeClient
) -> None:
    strict = await (await client.get(CARD, headers={"A2A-Version": "1.0"})).json()
    assert "url" not in strict
    assert "protocolVersion" not in strict
    assert len(strict["supportedInterfaces"]) == 4
    other = await make_client(make_settings(agentCard={"v03Fields": False}))
    assert "url" not in await (await other.get(CARD)).json()


async def test_caching_headers_and_304(client: Client) -> None:
    response = await client.get(CARD)
    assert "max-age=300" in response.headers["Cache-Control"]
    assert response.headers["Last-Modified"].endswith("GMT")
    assert response.headers["Vary"] == "A2A-Version"
    tag = response.headers["ETag"]
    assert tag.startswith('W/"')
    again = await client.get(CARD, headers={"If-None-Match": tag})
    assert again.status == 304
    assert again.headers["ETag"] == tag
    changed = await client.get(CARD, headers={"If-None-Match": 'W/"other"'})
    assert changed.status == 200


async def test_legacy_path(client: Client) -> None:
    response = await client.get("/.well-known/agent.json")
    assert (await response.json())["name"] == "Test agent"


async def test_forwarded_headers_only_when_trusted(client: Client, make_client: MakeClient) -> None:
    forwarded = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "agents.example.com"}
    card = await (await client.get(CARD, headers=forwarded)).json()
    assert card["url"].startswith("http://127.0.0.1")
    trusting = await make_client(make_settings(server={"trustForwardedHeaders": True}))
    card = await (await trusting.get(CARD, headers=forwarded)).json()
    assert card["url"] == "https://agents.example.com/a2a/jsonrpc"


async def test_public_url(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"publicUrl": "https://a.example/base/"}))
    card = await (await client.get(CARD)).json()
    assert card["supportedInterfaces"][1]["url"] == "https://a.example/base/a2a/rest"
