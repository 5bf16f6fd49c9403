"""Bearer tokens, principals, the card's security fields, and the browser guards
(docs/configuration.md, `server.auth`), through the real HTTP app."""

from __future__ import annotations

from typing import Any

import pytest

from core.settings import ConfigError, load
from tests.conftest import Client, MakeClient, make_settings
from tests.support.scripted import ScriptedBackend
from tests.support.wire import V1, rpc, user_message

TOKENS = {
    "auth": {
        "tokens": [
            {"token": "tok-a", "principal": "team-a"},
            {"token": "tok-b", "principal": "team-b"},
        ]
    }
}
A = {**V1, "Authorization": "Bearer tok-a"}
B = {**V1, "Authorization": "Bearer tok-b"}


@pytest.fixture
async def guarded(make_client: MakeClient) -> Client:
    return await make_client(
        make_settings(
            server=TOKENS,
            agentCard={
                "extended": {
                    "skills": [
                        {"id": "deploy", "name": "Deploy", "description": "ships", "tags": ["ops"]}
                    ]
                }
            },
        )
    )


async def rpc_call(
    client: Client, method: str, params: Any, headers: dict[str, str]
) -> dict[str, Any]:
    response = await client.post("/a2a/jsonrpc", json=rpc(method, params), headers=headers)
    assert response.status == 200
    body: dict[str, Any] = await response.json()
    return body


@pytest.mark.parametrize(
    ("method", "path", "version"),
    [
        ("POST", "/a2a/jsonrpc", "1.0"),
        ("POST", "/", "0.3"),
        ("GET", "/a2a/rest/tasks", "1.0"),
        ("GET", "/a2a/rest/v1/tasks", "0.3"),
        ("GET", "/a2a/rest/extendedAgentCard", "1.0"),
    ],
)
@pytest.mark.parametrize(
    ("authorization", "challenge"),
    [
        (None, 'Bearer realm="a2a-wrapper"'),
        ("Bearer wrong", 'Bearer realm="a2a-wrapper", error="invalid_token"'),
        ("Basic dGVhbS1hOnRvay1h", 'Bearer realm="a2a-wrapper", error="invalid_token"'),
        ("Bearer tok-a-and-more", 'Bearer realm="a2a-wrapper", error="invalid_token"'),
    ],
)
async def test_missing_or_wrong_token_is_refused_before_the_protocol(
    guarded: Client,
    backend: ScriptedBackend,
    method: str,
    path: str,
    version: str,
    authorization: str | None,
    challenge: str,
) -> None:
    headers = {"A2A-Version": version}
    if authorization:
        headers["Authorization"] = authorization
    body = rpc("SendMessage", {"message": user_message("echo: hi")})

    response = await guarded.request(method, path, json=body, headers=headers)

    assert response.status == 401
    assert response.headers["WWW-Authenticate"] == challenge
    error = (await response.json())["error"]
    assert error["status"] == "UNAUTHENTICATED"
    assert backend.turns == []


async def test_the_right_token_reaches_the_agent_as_its_principal(
    guarded: Client, backend: ScriptedBackend
) -> None:
    body = await rpc_call(guarded, "SendMessage", {"message": user_message("echo: hi")}, A)

    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert [t.principal for t in backend.turns] == ["team-a"]


async def test_caller_metadata_cannot_claim_another_principal(
    guarded: Client, backend: ScriptedBackend
) -> None:
    params = {"message": user_message("echo: hi"), "metadata": {"principal": "team-b"}}

    await rpc_call(guarded, "SendMessage", params, A)

    assert backend.turns[0].principal == "team-a"
    assert backend.turns[0].metadata == {"principal": "team-b"}


async def test_another_principals_task_is_not_found_on_every_method(guarded: Client) -> None:
    asked = await rpc_call(guarded, "SendMessage", {"message": user_message("ask: which?")}, A)
    task_id = asked["result"]["task"]["id"]
    context_id = asked["result"]["task"]["contextId"]

    for method, params in [
        ("GetTask", {"id": task_id}),
        ("CancelTask", {"id": task_id}),
        ("SubscribeToTask", {"id": task_id}),
        ("SendMessage", {"message": user_message("answer", taskId=task_id, messageId="m-2")}),
        ("SendStreamingMessage", {"message": user_message("x", taskId=task_id, messageId="m-3")}),
    ]:
        body = await rpc_call(guarded, method, params, B)
        assert body["error"]["code"] == -32001, (method, body)
    listed = await rpc_call(guarded, "ListTasks", {"contextId": context_id}, B)
    assert listed["result"]["tasks"] == []
    rest = await guarded.get(f"/a2a/rest/tasks/{task_id}", headers=B)
    assert rest.status == 404
    legacy = await guarded.post(
        "/", json=rpc("tasks/get", {"id": task_id}), headers={"Authorization": "Bearer tok-b"}
    )
    assert (await legacy.json())["error"]["code"] == -32001
    mine = await rpc_call(guarded, "GetTask", {"id": task_id}, A)
    assert mine["result"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


async def test_public_card_and_health_need_no_token(guarded: Client) -> None:
    for path in ("/.well-known/agent-card.json", "/health", "/ready"):
        response = await guarded.get(path)
        assert response.status == 200, path


async def test_card_advertises_bearer_in_both_dialects(guarded: Client) -> None:
    merged = await (await guarded.get("/.well-known/agent-card.json")).json()
    strict = await (await guarded.get("/.well-known/agent-card.json", headers=V1)).json()

    assert strict["securitySchemes"] == {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}
    assert strict["securityRequirements"] == [{"schemes": {"bearer": {}}}]
    assert "security" not in strict
    assert merged["securitySchemes"]["bearer"] == {
        "httpAuthSecurityScheme": {"scheme": "Bearer"},
        "type": "http",
        "scheme": "Bearer",
    }
    assert merged["security"] == [{"bearer": []}]
    assert merged["supportsAuthenticatedExtendedCard"] is True
    assert strict["capabilities"]["extendedAgentCard"] is True
    assert [s["id"] for s in strict["skills"]] == ["echo"]


async def test_extended_card_only_for_authenticated_callers(guarded: Client) -> None:
    refused = await guarded.post("/a2a/jsonrpc", json=rpc("GetExtendedAgentCard"), headers=V1)
    v1 = await rpc_call(guarded, "GetExtendedAgentCard", None, A)
    v03 = await rpc_call(
        guarded, "agent/getAuthenticatedExtendedCard", None, {"Authorization": "Bearer tok-b"}
    )
    rest = await guarded.get("/a2a/rest/extendedAgentCard", headers=A)

    assert refused.status == 401
    assert [s["id"] for s in v1["result"]["skills"]] == ["echo", "deploy"]
    assert "security" not in v1["result"]
    assert [s["id"] for s in v03["result"]["skills"]] == ["echo", "deploy"]
    assert v03["result"]["security"] == [{"bearer": []}]
    assert rest.status == 200


async def test_extended_card_not_configured(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server=TOKENS))

    body = await rpc_call(client, "GetExtendedAgentCard", None, A)

    assert body["error"]["code"] == -32007


def test_extended_card_needs_tokens() -> None:
    with pytest.raises(ConfigError, match=r"agentCard.extended .* needs server.auth.tokens"):
        make_settings(agentCard={"extended": {"skills": []}})


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.20", "example.com"])  # noqa: S104 - config data
def test_a_reachable_bind_without_tokens_refuses_to_start(host: str) -> None:
    with pytest.raises(ConfigError, match=r"server.allowUnauthenticated: true"):
        load(None, overrides={"backend": "x", "server": {"host": host}}, environ={})

    allowed = load(
        None,
        overrides={"backend": "x", "server": {"host": host, "allowUnauthenticated": True}},
        environ={},
    )
    with_token = load(
        None, overrides={"backend": "x", "server": {"host": host, **TOKENS}}, environ={}
    )
    assert allowed.server.host == with_token.server.host == host


async def test_browser_origins_are_refused_unless_allowed(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"allowedOrigins": ["http://localhost:3000"]}))
    card = "/.well-known/agent-card.json"

    evil = await client.get(card, headers={"Origin": "https://evil.example"})
    friend = await client.get(card, headers={"Origin": "http://localhost:3000"})
    plain = await client.get(card)

    assert evil.status == 403
    assert (await evil.json())["error"]["status"] == "PERMISSION_DENIED"
    assert friend.status == 200
    assert plain.status == 200


async def test_foreign_host_header_is_refused_on_a_loopback_bind(client: Client) -> None:
    rebound = await client.get("/health", headers={"Host": "attacker.example:8000"})
    local = await client.get("/health", headers={"Host": "localhost:8000"})

    assert rebound.status == 421
    assert local.status == 200


async def test_configured_hosts_replace_the_loopback_default(make_client: MakeClient) -> None:
    client = await make_client(make_settings(server={"allowedHosts": ["agents.internal"]}))

    named = await client.get("/health", headers={"Host": "agents.internal:8443"})
    loopback = await client.get("/health", headers={"Host": "127.0.0.1"})

    assert named.status == 200
    assert loopback.status == 421
