"""E2E, conversations: the real Copilot CLI behind the real daemon, against the chat
completions mock (offline, BYOK), Copilot state per test."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from structlog.testing import capture_logs
from structlog.typing import EventDict, WrappedLogger

from harness.mock_models.openai_chat import OpenAIChatMock, StallReply
from tests.backends.copilot.a2a import answer, send, start, wait_done, wrapper_metadata
from tests.backends.copilot.conftest import AppFactory, SettingsFactory, cli_pids

TELL = "Remember this: the secret word is BANANA."
ASK = "What was the secret word?"


async def test_usage_lands_in_the_task_metadata(copilot_app: AppFactory) -> None:
    client = await copilot_app()

    task = await send(client, "Say something.")

    usage = wrapper_metadata(task)["usage"]
    assert usage["inputTokens"] > 0
    assert usage["outputTokens"] > 0
    assert usage["model"] == "mock-model"
    assert usage["costUsd"] is None  # Copilot reports premium requests, not dollars


async def test_an_expired_session_starts_fresh(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    settings = copilot_settings(session={"ttl": 60_000, "cleanupInterval": 0})
    client = await copilot_app(settings, clock=lambda: now[0])
    first = await send(client, TELL)

    now[0] += timedelta(minutes=2)
    with capture_logs() as logs:
        second = await send(client, ASK)

    assert answer(second) == "I was never told a secret word."
    request = mock.matching(ASK)[-1]
    assert "BANANA" not in request.transcript
    meta = wrapper_metadata(second)
    assert (meta["newSession"], meta["expiredSession"]) == (True, True)
    assert meta["sessionId"] != wrapper_metadata(first)["sessionId"]
    # The daemon dropped the expired session: its warm SDK session was closed.
    dropped = [e["session_id"] for e in logs if e["event"] == "copilot.session_evicted"]
    assert dropped == [wrapper_metadata(first)["sessionId"]]


async def test_an_evicted_warm_session_is_resumed_by_id(
    copilot_app: AppFactory, copilot_settings: SettingsFactory
) -> None:
    # maxWarm 1: the second context evicts the first one's warm session.
    client = await copilot_app(copilot_settings(copilot={"maxWarm": 1}))
    with capture_logs() as logs:
        first = await send(client, TELL, context_id="one")
        await send(client, "Hello from elsewhere.", context_id="two")
        again = await send(client, ASK, context_id="one")

    evicted = [e for e in logs if e["event"] == "copilot.session_evicted"]
    assert evicted and evicted[0]["session_id"] == wrapper_metadata(first)["sessionId"]
    assert answer(again) == "The secret word was BANANA."
    assert wrapper_metadata(again)["sessionId"] == wrapper_metadata(first)["sessionId"]


async def test_an_idle_warm_session_is_closed_after_warm_idle_then_resumed(
    copilot_app: AppFactory, copilot_settings: SettingsFactory
) -> None:
    evicted = anyio.Event()

    def notice(logger: WrappedLogger, method: str, event: EventDict) -> EventDict:
        if event.get("event") == "copilot.session_evicted":
            evicted.set()
        return event

    client = await copilot_app(copilot_settings(copilot={"warmIdle": 50}))
    with capture_logs(processors=[notice]):
        first = await send(client, TELL)
        with anyio.fail_after(5):
            await evicted.wait()
        again = await send(client, ASK)

    assert answer(again) == "The secret word was BANANA."
    assert wrapper_metadata(again)["sessionId"] == wrapper_metadata(first)["sessionId"]


async def test_two_contexts_run_at_once_on_one_cli_without_crosstalk(
    copilot_app: AppFactory,
    copilot_settings: SettingsFactory,
    mock: OpenAIChatMock,
    tmp_path: Path,
) -> None:
    # Each reply streams a word, then waits until both model calls are in flight.
    mock.reply(StallReply(before="alpha ", after="one"), when="first")
    mock.reply(StallReply(before="beta ", after="two"), when="second")
    # A workspace per context: in the shared default two contexts take turns, one at a time.
    workspace = {"mode": "copy", "root": str(tmp_path / "workspaces")}
    client = await copilot_app(copilot_settings(workspace=workspace))

    one = await start(client, "the first one", context_id="one")
    two = await start(client, "the second one", context_id="two")
    await mock.wait_for_request("first")
    await mock.wait_for_request("second")
    mock.release_stalls()
    first, second = await wait_done(client, one), await wait_done(client, two)

    assert answer(first) == "alpha one"
    assert answer(second) == "beta two"
    assert len(cli_pids()) == 1
