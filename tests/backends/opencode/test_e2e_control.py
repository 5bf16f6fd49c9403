"""E2E: cancel, deadlines, model errors, stream output and session ttl, with the real OpenCode
behind the daemon's real app and the project's mock model (approvals: test_e2e_approvals.py)."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs

from harness.mock_models.openai_chat import (
    OpenAIChatMock,
)
from harness.mock_models.steps import Upstream
from tests.backends.opencode.conftest import MakeSettings, StartDaemon
from tests.backends.opencode.support import answer, send, status_text, wrapper_metadata
from tests.support.errors import SECRET, assert_logged_safely

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        (401, "The model endpoint refused the credentials (HTTP 401). Check the API key"),
        (400, "The model endpoint returned an error (HTTP 400)."),
        (500, "The model endpoint keeps failing; gave up after 2 attempts."),
    ],
)
async def test_model_errors_fail_the_task_with_a_clear_message(
    opencode_settings: MakeSettings,
    start_daemon: StartDaemon,
    mock: OpenAIChatMock,
    status: int,
    expected: str,
) -> None:
    # The endpoint's error body quotes a key: OpenCode passes it on, the caller never sees it.
    # Upstream sends retry-after-ms 10: OpenCode honours it, its retry comes at once.
    mock.turns.add([Upstream(status, f"mock says no: {SECRET}")])
    settings = opencode_settings(opencode={"maxRetries": 1}, timeouts={"turn": 30_000})
    client = await start_daemon(settings)

    started = time.monotonic()
    with capture_logs() as logs:
        task = await send(client, "Hello?")

    # A refused key asks for credentials (the task can go on once they are fixed).
    ends = "TASK_STATE_AUTH_REQUIRED" if status == 401 else "TASK_STATE_FAILED"
    assert task["status"]["state"] == ends, task
    text = status_text(task)
    assert text.startswith(expected)
    assert_logged_safely(text, logs)
    assert time.monotonic() - started < 30
    assert "Traceback" not in text
    assert SECRET not in json.dumps(task)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


async def test_an_expired_session_starts_fresh(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    clock = Clock()
    settings = opencode_settings(session={"ttl": 60_000, "cleanupInterval": 0})
    client = await start_daemon(settings, clock=clock)
    first = await send(client, "Remember: the secret word is LIME.", context_id="ctx-t")

    clock.now += timedelta(minutes=2)
    second = await send(client, "What was the secret word?", context_id="ctx-t", message_id="m-2")

    assert answer(second) == "I was never told a secret word."
    request = await mock.wait_for_request("What was the secret word?")
    assert "LIME" not in request.transcript
    meta: dict[str, Any] = wrapper_metadata(second)
    assert meta["expiredSession"] is True
    assert meta["newSession"] is True
    assert meta["sessionId"] != wrapper_metadata(first)["sessionId"]
