"""Push notifications delivered to a real webhook receiver on 127.0.0.1, both versions:
bodies, headers and order; retries; a dead receiver; a restart mid-delivery; principals."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from core.daemon import create_app
from core.settings import Settings
from tests.conftest import Client, MakeClient, make_settings
from tests.support.metrics import scrape, value
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend
from tests.support.webhook import Webhook, serve_webhook
from tests.support.wire import V1, call, rpc, sse_events, user_message

PUSH = {"enabled": True, "allowPrivateTargets": True, "backoff": 1, "maxBackoff": 5}


def push_settings(**push: Any) -> Settings:
    return make_settings(push={**PUSH, **push})


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    async for hook in serve_webhook():
        yield hook


@pytest.fixture
async def other_webhook() -> AsyncIterator[Webhook]:
    async for hook in serve_webhook():
        yield hook


@pytest.fixture
async def pushing(make_client: MakeClient) -> Client:
    return await make_client(push_settings())


def v1_config(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "url": url,
        "token": "tok",
        "authentication": {"scheme": "Bearer", "credentials": "abc"},
        **extra,
    }


async def rest_stream(client: Client, text: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Send over the v1.0 REST stream with an inline push config; the events, in order."""
    response = await client.post(
        "/a2a/rest/message:stream",
        json={
            "message": user_message(text),
            "configuration": {"taskPushNotificationConfig": config},
        },
        headers=V1,
    )
    assert response.status == 200
    return [data for _, data in await sse_events(response)]


def check_headers(hook: Webhook) -> None:
    for received in hook.received:
        assert received.headers["Authorization"] == "Bearer abc"
        assert received.headers["X-A2A-Notification-Token"] == "tok"
        assert received.headers["Content-Type"] == "application/json"


async def test_v1_every_event_arrives_in_order_as_a_stream_response(
    pushing: Client, webhook: Webhook
) -> None:
    events = await rest_stream(pushing, "deltas: a|b|c", v1_config(webhook.url))
    assert [next(iter(e)) for e in events][:2] == ["task", "statusUpdate"]
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"

    delivered = await webhook.wait_delivered(len(events))

    assert delivered == events
    check_headers(webhook)


async def test_v1_inline_config_on_a_blocking_send_over_jsonrpc(
    pushing: Client, webhook: Webhook
) -> None:
    body = await call(
        pushing,
        "SendMessage",
        {
            "message": user_message("echo: hi"),
            "configuration": {"taskPushNotificationConfig": v1_config(webhook.url)},
        },
    )
    task = body["result"]["task"]

    delivered = await webhook.wait_delivered(3)

    assert delivered[0]["task"]["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert delivered[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
    assert {task_of(d) for d in delivered} == {task["id"]}


def task_of(event: dict[str, Any]) -> str:
    if "task" in event:
        return str(event["task"]["id"])
    [(_, update)] = event.items()
    return str(update["taskId"])


def v03_states(events: list[dict[str, Any]]) -> list[str]:
    """The task's state after each v0.3 stream event (an artifact keeps the last state)."""
    states: list[str] = []
    for event in events:
        result = event["result"]
        if result["kind"] in ("task", "status-update"):
            states.append(result["status"]["state"])
        else:
            states.append(states[-1])
    return states


async def test_v03_every_event_arrives_in_order_as_the_whole_task(
    pushing: Client, webhook: Webhook
) -> None:
    response = await pushing.post(
        "/a2a/jsonrpc",
        json=rpc(
            "message/stream",
            {
                "message": {
                    "kind": "message",
                    "messageId": "m-1",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "echo: hi"}],
                },
                "configuration": {
                    "pushNotificationConfig": {
                        "url": webhook.url,
                        "token": "tok",
                        "authentication": {"schemes": ["Bearer"], "credentials": "abc"},
                    }
                },
            },
        ),
    )
    events = [data for _, data in await sse_events(response)]
    task_id = events[0]["result"]["id"]

    delivered = await webhook.wait_delivered(len(events))

    assert [d["kind"] for d in delivered] == ["task"] * len(events)
    assert {d["id"] for d in delivered} == {task_id}
    assert [d["status"]["state"] for d in delivered] == v03_states(events)
    assert delivered[-1]["status"]["state"] == "completed"
    assert delivered[-1]["artifacts"][0]["parts"] == [{"kind": "text", "text": "hi"}]
    check_headers(webhook)


async def test_a_receiver_that_fails_twice_still_gets_everything_in_order(
    pushing: Client, webhook: Webhook
) -> None:
    webhook.fail_next = 2
    events = await rest_stream(pushing, "echo: retry", v1_config(webhook.url))

    delivered = await webhook.wait_delivered(len(events))

    assert delivered == events
    assert [r.status for r in webhook.received[:3]] == [500, 500, 200]
    assert webhook.received[0].body == webhook.received[2].body == events[0]


async def test_push_attempts_are_counted_in_the_metrics(pushing: Client, webhook: Webhook) -> None:
    webhook.fail_next = 2
    events = await rest_stream(pushing, "echo: retry", v1_config(webhook.url))
    await webhook.wait_delivered(len(events))

    # The receiver answers before the daemon counts the delivery.
    samples = await until(
        lambda: scrape(pushing),
        lambda s: value(s, "a2a_push_attempts_total", outcome="delivered") >= len(events),
    )

    assert value(samples, "a2a_push_attempts_total", outcome="delivered") == len(events)
    assert value(samples, "a2a_push_attempts_total", outcome="retry") == 2


async def test_a_dead_receiver_delays_neither_the_task_nor_other_webhooks(
    make_client: MakeClient, webhook: Webhook, other_webhook: Webhook
) -> None:
    client = await make_client(push_settings(timeout=60_000))
    webhook.hold = asyncio.Event()  # accepts the request, never answers
    stuck = await call(
        client,
        "SendMessage",
        {
            "message": user_message("echo: one"),
            "configuration": {"taskPushNotificationConfig": v1_config(webhook.url)},
        },
    )
    assert stuck["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
    await webhook.wait_received(1)

    events = await rest_stream(client, "echo: two", v1_config(other_webhook.url))
    assert await other_webhook.wait_delivered(len(events)) == events
    # The first webhook is still holding its first notification.
    assert webhook.delivered == []
    assert len(webhook.received) == 1


async def test_a_restart_mid_delivery_loses_nothing(
    durable_storage: dict[str, Any], backend: ScriptedBackend, webhook: Webhook
) -> None:
    settings = make_settings(
        storage=durable_storage,
        push={**PUSH, "backoff": 600_000, "maxBackoff": 600_000},
    )
    webhook.fail_next = 1_000
    first = TestClient(TestServer(create_app(settings, backend=backend)))
    await first.start_server()
    try:
        response = await first.post(
            "/a2a/rest/message:stream",
            json={
                "message": user_message("echo: survive"),
                "configuration": {"taskPushNotificationConfig": v1_config(webhook.url)},
            },
            headers=V1,
        )
        events = [data for _, data in await sse_events(response)]
        await webhook.wait_received(1)  # the first attempt failed; the rest wait behind it
    finally:
        await first.close()
    assert webhook.delivered == []

    webhook.fail_next = 0
    second = TestClient(TestServer(create_app(settings, backend=backend)))
    await second.start_server()
    try:
        assert await webhook.wait_delivered(len(events)) == events
    finally:
        await second.close()


async def test_configs_are_scoped_to_the_principal(
    make_client: MakeClient, webhook: Webhook
) -> None:
    tokens = {
        "auth": {
            "tokens": [{"token": "tok-a", "principal": "a"}, {"token": "tok-b", "principal": "b"}]
        }
    }
    client = await make_client(make_settings(server=tokens, push=PUSH))
    alice = {**V1, "Authorization": "Bearer tok-a"}
    bob = {**V1, "Authorization": "Bearer tok-b"}
    sent = await call(
        client,
        "SendMessage",
        {"message": user_message("echo: mine"), "configuration": {"returnImmediately": True}},
        headers=alice,
    )
    task_id = sent["result"]["task"]["id"]
    created = await call(
        client,
        "CreateTaskPushNotificationConfig",
        {"taskId": task_id, "id": "c1", "url": webhook.url},
        headers=alice,
    )
    assert created["result"]["id"] == "c1"

    for method, params in (
        ("CreateTaskPushNotificationConfig", {"taskId": task_id, "url": webhook.url}),
        ("GetTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}),
        ("ListTaskPushNotificationConfigs", {"taskId": task_id}),
        ("DeleteTaskPushNotificationConfig", {"taskId": task_id, "id": "c1"}),
    ):
        body = await call(client, method, params, headers=bob)
        assert body["error"]["code"] == -32001, method
    listed = await call(
        client, "ListTaskPushNotificationConfigs", {"taskId": task_id}, headers=alice
    )
    assert [c["id"] for c in listed["result"]["configs"]] == ["c1"]


async def test_a_loopback_receiver_listed_in_allowed_targets_gets_everything(
    make_client: MakeClient, webhook: Webhook
) -> None:
    """`push.allowedTargets` opens the one receiver it lists, and nothing else: no
    `allowPrivateTargets`, so other loopback addresses stay refused."""
    settings = make_settings(push={"enabled": True, "allowedTargets": ["127.0.0.1/32"]})
    client = await make_client(settings)

    events = await rest_stream(client, "deltas: a|b", v1_config(webhook.url))
    delivered = await webhook.wait_delivered(len(events))

    assert delivered == events
    other_loopback = webhook.url.replace("127.0.0.1", "[::1]")
    refused = await call(
        client,
        "SendMessage",
        {
            "message": user_message("echo: hi"),
            "configuration": {"taskPushNotificationConfig": v1_config(other_loopback)},
        },
    )
    assert "loopback" in refused["error"]["message"], refused
