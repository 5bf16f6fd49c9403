"""Golden tests of push-config CRUD on the raw wire: v1.0 and v0.3, JSON-RPC and REST."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Client, MakeClient, make_settings
from tests.support.wire import V1, call, user_message

URL = "https://hooks.example/a2a"
AUTH_V1 = {"scheme": "Bearer", "credentials": "abc"}
AUTH_V03 = {"schemes": ["Bearer"], "credentials": "abc"}


@pytest.fixture
async def pushing(make_client: MakeClient) -> Client:
    # Private targets allowed: the guard then checks only the scheme, so no DNS is needed.
    return await make_client(make_settings(push={"enabled": True, "allowPrivateTargets": True}))


async def new_task(client: Client) -> str:
    body = await call(client, "SendMessage", {"message": user_message("ask: more?")})
    return str(body["result"]["task"]["id"])


async def test_v1_jsonrpc_crud(pushing: Client) -> None:
    task = await new_task(pushing)
    config = {"taskId": task, "id": "c1", "url": URL, "token": "t", "authentication": AUTH_V1}

    created = await call(pushing, "CreateTaskPushNotificationConfig", config)
    assert created == {"jsonrpc": "2.0", "id": 1, "result": config}
    got = await call(pushing, "GetTaskPushNotificationConfig", {"taskId": task, "id": "c1"})
    assert got["result"] == config
    default = await call(pushing, "CreateTaskPushNotificationConfig", {"taskId": task, "url": URL})
    assert default["result"] == {"taskId": task, "id": task, "url": URL}
    listed = await call(pushing, "ListTaskPushNotificationConfigs", {"taskId": task})
    assert listed["result"] == {"configs": [config, default["result"]], "nextPageToken": ""}
    page = await call(pushing, "ListTaskPushNotificationConfigs", {"taskId": task, "pageSize": 1})
    assert page["result"] == {"configs": [config], "nextPageToken": "1"}

    for _ in range(2):  # idempotent
        deleted = await call(
            pushing, "DeleteTaskPushNotificationConfig", {"taskId": task, "id": "c1"}
        )
        assert deleted == {"jsonrpc": "2.0", "id": 1, "result": None}
    missing = await call(pushing, "GetTaskPushNotificationConfig", {"taskId": task, "id": "c1"})
    assert missing["error"]["code"] == -32001
    unknown = await call(pushing, "ListTaskPushNotificationConfigs", {"taskId": "nope"})
    assert unknown["error"]["code"] == -32001


async def test_v1_rest_crud(pushing: Client) -> None:
    task = await new_task(pushing)
    base = f"/a2a/rest/tasks/{task}/pushNotificationConfigs"
    config = {"id": "c1", "url": URL, "authentication": AUTH_V1}

    created = await pushing.post(base, json=config, headers=V1)
    assert created.status == 200
    assert await created.json() == {**config, "taskId": task}
    got = await pushing.get(f"{base}/c1", headers=V1)
    assert await got.json() == {**config, "taskId": task}
    listed = await pushing.get(base, headers=V1)
    assert await listed.json() == {"configs": [{**config, "taskId": task}], "nextPageToken": ""}
    for _ in range(2):
        deleted = await pushing.delete(f"{base}/c1", headers=V1)
        assert deleted.status == 200
        assert await deleted.json() == {}
    missing = await pushing.get(f"{base}/c1", headers=V1)
    assert missing.status == 404


async def test_v03_jsonrpc_crud(pushing: Client) -> None:
    task = await new_task(pushing)
    push = {"id": "c1", "url": URL, "token": "t", "authentication": AUTH_V03}

    created = await call(
        pushing,
        "tasks/pushNotificationConfig/set",
        {"taskId": task, "pushNotificationConfig": push},
        headers={},
    )
    assert created == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"taskId": task, "pushNotificationConfig": push},
    }
    got = await call(
        pushing,
        "tasks/pushNotificationConfig/get",
        {"id": task, "pushNotificationConfigId": "c1"},
        headers={},
    )
    assert got["result"] == created["result"]
    first = await call(pushing, "tasks/pushNotificationConfig/get", {"id": task}, headers={})
    assert first["result"] == created["result"]
    fallback = await call(
        pushing,
        "tasks/pushNotificationConfig/get",
        {"id": task, "pushNotificationConfigId": "default"},
        headers={},
    )
    assert fallback["result"] == created["result"]
    listed = await call(pushing, "tasks/pushNotificationConfig/list", {"id": task}, headers={})
    assert listed["result"] == [created["result"]]
    for _ in range(2):
        deleted = await call(
            pushing,
            "tasks/pushNotificationConfig/delete",
            {"id": task, "pushNotificationConfigId": "c1"},
            headers={},
        )
        assert deleted == {"jsonrpc": "2.0", "id": 1, "result": None}
    empty = await call(pushing, "tasks/pushNotificationConfig/list", {"id": task}, headers={})
    assert empty["result"] == []
    none = await call(
        pushing,
        "tasks/pushNotificationConfig/get",
        {"id": task, "pushNotificationConfigId": "c1"},
        headers={},
    )
    assert none["error"]["code"] == -32001
    # v1.0 reads a v0.3 config in its own shape.
    await call(
        pushing,
        "tasks/pushNotificationConfig/set",
        {"taskId": task, "pushNotificationConfig": push},
        headers={},
    )
    v1 = await call(pushing, "GetTaskPushNotificationConfig", {"taskId": task, "id": "c1"})
    assert v1["result"] == {
        "taskId": task,
        "id": "c1",
        "url": URL,
        "token": "t",
        "authentication": AUTH_V1,
    }


async def test_v03_rest_crud(pushing: Client) -> None:
    task = await new_task(pushing)
    base = f"/a2a/rest/v1/tasks/{task}/pushNotificationConfigs"
    push = {"id": "c1", "url": URL, "authentication": AUTH_V03}
    expected = {"name": f"tasks/{task}/pushNotificationConfigs/c1", "pushNotificationConfig": push}

    # The reference v0.3 client's body, then the bare config the proto also allows.
    sdk_body = {
        "parent": f"tasks/{task}",
        "configId": "c1",
        "config": {"name": "", "pushNotificationConfig": {"url": URL, "authentication": AUTH_V03}},
    }
    created = await pushing.post(base, json=sdk_body)
    assert created.status == 200
    assert await created.json() == expected
    bare = await pushing.post(base, json={"pushNotificationConfig": push})
    assert await bare.json() == expected
    got = await pushing.get(f"{base}/c1")
    assert await got.json() == expected
    listed = await pushing.get(base)
    assert await listed.json() == {"configs": [expected]}
    for _ in range(2):
        deleted = await pushing.delete(f"{base}/c1")
        assert deleted.status == 200
    assert await (await pushing.get(base)).json() == {"configs": []}


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("CreateTaskPushNotificationConfig", {"taskId": "x", "url": URL}),
        ("GetTaskPushNotificationConfig", {"taskId": "x", "id": "c"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "x"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "x", "id": "c"}),
        ("tasks/pushNotificationConfig/set", {"taskId": "x"}),
        ("tasks/pushNotificationConfig/get", {"id": "x"}),
        ("tasks/pushNotificationConfig/list", {"id": "x"}),
        ("tasks/pushNotificationConfig/delete", {"id": "x"}),
    ],
)
async def test_push_off_refuses_every_operation(
    client: Client, method: str, params: dict[str, Any]
) -> None:
    headers = V1 if method[0].isupper() else {}
    body = await call(client, method, params, headers=headers)
    assert body["error"]["code"] == -32003


async def test_push_off_refuses_inline_configs_and_the_card_says_so(client: Client) -> None:
    card = await (await client.get("/.well-known/agent-card.json")).json()
    assert card["capabilities"]["pushNotifications"] is False
    body = await call(
        client,
        "SendMessage",
        {
            "message": user_message("echo: x"),
            "configuration": {"taskPushNotificationConfig": {"url": URL}},
        },
    )
    assert body["error"]["code"] == -32003


async def test_push_on_is_in_the_card(pushing: Client) -> None:
    card = await (await pushing.get("/.well-known/agent-card.json")).json()
    assert card["capabilities"]["pushNotifications"] is True


async def test_a_blocked_target_is_invalid_params_naming_the_field(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(push={"enabled": True}))
    task = await new_task(client)

    v1 = await call(
        client, "CreateTaskPushNotificationConfig", {"taskId": task, "url": "http://127.0.0.1:9/"}
    )
    assert v1["error"]["code"] == -32602
    assert "url: 127.0.0.1 is a loopback address" in v1["error"]["message"]
    assert v1["error"]["data"][1]["fieldViolations"][0]["field"] == "url"

    v03 = await call(
        client,
        "tasks/pushNotificationConfig/set",
        {"taskId": task, "pushNotificationConfig": {"url": "ftp://hooks.example/"}},
        headers={},
    )
    assert v03["error"]["code"] == -32602
    assert v03["error"]["data"] == [
        {
            "field": "pushNotificationConfig.url",
            "description": "only http and https URLs are allowed",
        }
    ]

    inline = await call(
        client,
        "SendMessage",
        {
            "message": user_message("echo: x"),
            "configuration": {"taskPushNotificationConfig": {"url": "http://10.0.0.1/"}},
        },
    )
    assert inline["error"]["code"] == -32602
    field = inline["error"]["data"][1]["fieldViolations"][0]["field"]
    assert field == "configuration.taskPushNotificationConfig.url"
