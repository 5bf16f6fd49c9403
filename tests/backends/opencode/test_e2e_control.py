"""E2E: cancel, deadlines, model errors, stream output and session ttl, with the real OpenCode
behind the daemon's real app and the project's mock model (approvals: test_e2e_approvals.py)."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests.backends.opencode.conftest import MakeSettings, StartDaemon
from tests.backends.opencode.support import answer, send, status_text, wrapper_metadata
from tests.support.errors import SECRET, assert_logged_safely
from tests.support.mock_models.openai_chat import (
    ErrorReply,
    OpenAIChatMock,
    StallReply,
    TextReply,
)
from tests.support.wire import V1, call, rpc, sse_events, user_message

pytestmark = pytest.mark.timeout(120)


async def test_cancel_mid_turn_stops_opencode_and_the_context_goes_on(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    mock.reply(StallReply(before="Partial "), when="think forever")
    client = await start_daemon(opencode_settings())
    await send(client, "Remember: the secret word is FIG.", context_id="ctx-x")
    sent = await call(
        client,
        "SendMessage",
        {
            "message": user_message("Please think forever.", contextId="ctx-x", messageId="m-2"),
            "configuration": {"returnImmediately": True},
        },
    )
    task_id = sent["result"]["task"]["id"]
    stalled = await mock.wait_for_request("think forever")

    started = time.monotonic()
    canceled = await call(client, "CancelTask", {"id": task_id})
    elapsed = time.monotonic() - started

    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
    assert elapsed < 2.0
    # OpenCode really stopped: the model call was dropped, and it was not retried.
    assert stalled.disconnected
    after = await send(client, "What was the secret word?", context_id="ctx-x", message_id="m-3")
    assert after["status"]["state"] == "TASK_STATE_COMPLETED", after
    assert answer(after) == "The secret word was FIG."
    assert len(mock.matching("think forever")) == 1
    assert wrapper_metadata(after)["sessionId"] == wrapper_metadata(canceled["result"])["sessionId"]


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
    # retry-after-ms keeps OpenCode's retry delay short (it honours the header).
    mock.reply(ErrorReply(status, f"mock says no: {SECRET}", headers={"retry-after-ms": "10"}))
    settings = opencode_settings(opencode={"maxRetries": 1}, timeouts={"turn": 30_000})
    client = await start_daemon(settings)

    started = time.monotonic()
    with capture_logs() as logs:
        task = await send(client, "Hello?")

    assert task["status"]["state"] == "TASK_STATE_FAILED", task
    text = status_text(task)
    assert text.startswith(expected)
    assert_logged_safely(text, logs)
    assert time.monotonic() - started < 30
    assert "Traceback" not in text
    assert SECRET not in json.dumps(task)


async def test_a_stalled_model_hits_the_idle_timeout_and_opencode_is_stopped(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    # One word, then silence: the idle clock restarts at that word, so the timeout surely falls
    # in the stall (5 s leaves a loaded machine time to reach the model at all).
    mock.reply(StallReply(before="Thinking "), when="stall now")
    client = await start_daemon(opencode_settings(timeouts={"idle": 5000}))
    await send(client, "Warm up.", context_id="ctx-i", message_id="m-0")

    task = await send(client, "Please stall now.", context_id="ctx-i")

    assert task["status"]["state"] == "TASK_STATE_FAILED", task
    assert "timeouts.idle" in status_text(task)
    # The model call was made, and OpenCode dropped it when the daemon stopped the turn.
    stalled = await mock.wait_for_request("stall now", within=1)
    await mock.wait_until(lambda: stalled.disconnected, within=5)
    after = await send(client, "Still there?", context_id="ctx-i", message_id="m-2")
    assert answer(after) == "MOCK REPLY: Still there?"


async def test_stream_mode_sends_the_model_deltas_in_order_exactly_once(
    opencode_settings: MakeSettings, start_daemon: StartDaemon, mock: OpenAIChatMock
) -> None:
    text = "Streaming works: one two three four five."
    mock.reply(TextReply(text), when="stream it")
    client = await start_daemon(opencode_settings(output={"mode": "stream"}))

    response = await client.post(
        "/a2a/jsonrpc",
        headers=V1,
        json=rpc("SendStreamingMessage", {"message": user_message("Please stream it.")}),
    )
    events = [data["result"] for _, data in await sse_events(response)]

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    pieces = ["".join(p["text"] for p in c["artifact"]["parts"]) for c in chunks]
    # One chunk per word the model streamed, in order, none resent (the daemon may close the
    # artifact with an empty last chunk).
    assert [p for p in pieces if p] == re.findall(r"\S+\s*", text)
    assert [c.get("append", False) for c in chunks] == [False] + [True] * (len(chunks) - 1)
    assert [c.get("lastChunk", False) for c in chunks][-1] is True
    task_id = chunks[0]["taskId"]
    stored = (await call(client, "GetTask", {"id": task_id}))["result"]
    assert stored["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answer(stored) == text


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
