"""Bad input over REST (both versions): the right status and a Status body, never a 500."""

from __future__ import annotations

import pytest

from tests.conftest import Client, MakeClient, make_settings
from tests.protocol.test_rest_v1 import json_of
from tests.support.wire import V1, user_message

PREFIXES = [("/a2a/rest", V1), ("/a2a/rest/v1", {})]


async def _still_serving(client: Client) -> None:
    response = await client.post(
        "/a2a/rest/message:send", json={"message": user_message("echo: ok")}, headers=V1
    )
    assert (await json_of(response))["task"]["status"]["state"] == "TASK_STATE_COMPLETED"


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
async def test_unknown_task(client: Client, prefix: str, headers: dict[str, str]) -> None:
    for verb, path in [
        ("GET", "/tasks/nope"),
        ("POST", "/tasks/nope:cancel"),
        ("POST", "/tasks/nope:subscribe"),
    ]:
        response = await client.request(verb, prefix + path, headers=headers)
        body = await json_of(response, 404)
        assert body["error"]["code"] == 404
        assert body["error"]["status"] == "NOT_FOUND"
        assert body["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
async def test_bad_json(client: Client, prefix: str, headers: dict[str, str]) -> None:
    response = await client.post(
        f"{prefix}/message:send",
        data=b"{nope",
        headers={**headers, "Content-Type": "application/json"},
    )
    body = await json_of(response, 400)
    assert body["error"]["details"][0]["reason"] == "PARSE_ERROR"
    await _still_serving(client)


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
async def test_wrong_types(client: Client, prefix: str, headers: dict[str, str]) -> None:
    for payload in ({"message": "hi"}, {"message": {"messageId": 3, "role": "ROLE_USER"}}, [1]):
        response = await client.post(f"{prefix}/message:send", json=payload, headers=headers)
        body = await json_of(response, 400)
        assert body["error"]["status"] == "INVALID_ARGUMENT"
        assert body["error"]["details"][0]["reason"] == "INVALID_PARAMS"
    response = await client.get(f"{prefix}/tasks/x?historyLength=lots", headers=headers)
    assert (await json_of(response, 400))["error"]["details"][0]["reason"] == "INVALID_PARAMS"


async def test_bad_list_query(client: Client) -> None:
    for query in ("pageSize=500", "pageSize=x", "status=NOPE", "pageToken=%25%25"):
        response = await client.get(f"/a2a/rest/tasks?{query}", headers=V1)
        body = await json_of(response, 400)
        assert body["error"]["details"][0]["reason"] == "INVALID_PARAMS", query


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
async def test_wrong_verb(client: Client, prefix: str, headers: dict[str, str]) -> None:
    response = await client.put(f"{prefix}/message:send", headers=headers)
    body = await json_of(response, 405)
    assert body["error"]["code"] == 405
    assert "POST" in response.headers["Allow"]


async def test_unknown_route(client: Client) -> None:
    response = await client.get("/a2a/rest/nothing/here/at/all", headers=V1)
    body = await json_of(response, 404)
    assert body["error"]["details"][0]["reason"] == "METHOD_NOT_FOUND"


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
async def test_wrong_content_type(client: Client, prefix: str, headers: dict[str, str]) -> None:
    response = await client.post(
        f"{prefix}/message:send", data=b"hello", headers={**headers, "Content-Type": "text/plain"}
    )
    body = await json_of(response, 415)
    assert body["error"]["details"][0]["reason"] == "CONTENT_TYPE_NOT_SUPPORTED"


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
async def test_oversized_body(
    make_client: MakeClient, prefix: str, headers: dict[str, str]
) -> None:
    client = await make_client(make_settings(server={"maxBodyBytes": 2048}))
    payload = {"message": user_message("echo: " + "x" * 4096)}
    response = await client.post(f"{prefix}/message:send", json=payload, headers=headers)
    body = await json_of(response, 413)
    assert body["error"]["details"][0]["reason"] == "INVALID_REQUEST"
    await _still_serving(client)


@pytest.mark.parametrize(("prefix", "headers"), PREFIXES)
@pytest.mark.parametrize("task_id", ["a:b", "a%3Ab", "a%2Fb", "a/b", "x:bogus"])
async def test_task_ids_with_colon_or_slash(
    client: Client, prefix: str, headers: dict[str, str], task_id: str
) -> None:
    response = await client.get(f"{prefix}/tasks/{task_id}", headers=headers)
    body = await json_of(response, 404)
    assert body["error"]["code"] == 404
    response = await client.post(f"{prefix}/tasks/{task_id}:cancel", headers=headers)
    assert (await json_of(response, 404))["error"]["code"] == 404
    await _still_serving(client)
