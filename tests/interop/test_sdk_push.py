"""Interop: the official a2a-sdk client registers push configs in every mode, and the webhook
it names receives the task's notifications."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetTaskPushNotificationConfigRequest,
    ListTaskPushNotificationConfigsRequest,
    SendMessageRequest,
    TaskPushNotificationConfig,
    TaskState,
)
from aiohttp.test_utils import TestServer

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from tests.conftest import make_settings
from tests.interop.conftest import MakeSdk, collect, user_msg
from tests.support.scripted import ScriptedBackend
from tests.support.webhook import Webhook, serve_webhook


@pytest.fixture
async def base_url(
    aiohttp_server: Callable[..., Awaitable[TestServer]], backend: ScriptedBackend
) -> str:
    settings = make_settings(
        push={"enabled": True, "allowPrivateTargets": True, "backoff": 1},
        server={"grpcPort": 0},
    )
    server = await aiohttp_server(create_app(settings, backend=backend, store=InMemoryTaskStore()))
    return str(server.make_url("")).rstrip("/")


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    async for hook in serve_webhook():
        yield hook


async def test_register_a_config_and_receive_notifications(
    sdk: MakeSdk, mode: str, webhook: Webhook, backend: ScriptedBackend
) -> None:
    async with await sdk(streaming=False) as client:
        [event] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("ask: ok?")))
        )
        task = event.task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        config = TaskPushNotificationConfig(
            task_id=task.id,
            id="hook-1",
            url=webhook.url,
            token="tok",
            authentication=AuthenticationInfo(scheme="Bearer", credentials="abc"),
        )
        created = await client.create_task_push_notification_config(config)
        assert (created.id, created.url, created.authentication.credentials) == (
            "hook-1",
            webhook.url,
            "abc",
        )
        got = await client.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id=task.id, id="hook-1")
        )
        assert got.url == webhook.url
        if mode != "v03-rest":  # the SDK's v0.3 REST client has neither list nor delete
            listed = await client.list_task_push_notification_configs(
                ListTaskPushNotificationConfigsRequest(task_id=task.id)
            )
            assert [c.id for c in listed.configs] == ["hook-1"]

        await collect(
            client.send_message(SendMessageRequest(message=user_msg("echo: done", task_id=task.id)))
        )
        delivered = await webhook.wait_delivered(1)
        assert webhook.received[0].headers["Authorization"] == "Bearer abc"
        if mode.startswith("v03"):
            assert delivered[0]["kind"] == "task"
        else:
            assert set(delivered[0]) <= {"task", "statusUpdate", "artifactUpdate"}

        if mode != "v03-rest":
            await client.delete_task_push_notification_config(
                DeleteTaskPushNotificationConfigRequest(task_id=task.id, id="hook-1")
            )
