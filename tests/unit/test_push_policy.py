"""Retry timing and webhook headers of the push dispatcher."""

from __future__ import annotations

from core.push.dispatcher import RetryPolicy, webhook_headers
from core.wire.models import AuthenticationInfo, TaskPushNotificationConfig


def test_backoff_doubles_is_capped_and_jittered_into_half_to_full() -> None:
    policy = RetryPolicy(max_attempts=10, backoff=1.0, max_backoff=5.0)

    assert [policy.delay(n, 1.0) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]
    assert [policy.delay(n, 0.0) for n in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, 2.5]


def test_headers_carry_the_configured_auth_and_token_only() -> None:
    bare = TaskPushNotificationConfig(url="https://h.example/")
    full = TaskPushNotificationConfig(
        url="https://h.example/",
        token="tok",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="abc"),
    )

    assert webhook_headers(bare) == {"Content-Type": "application/json"}
    assert webhook_headers(full) == {
        "Content-Type": "application/json",
        "Authorization": "Bearer abc",
        "X-A2A-Notification-Token": "tok",
    }
