"""E2E, stopping turns: cancel, the idle deadline and a CLI crash each stop the real agent, and
the conversation goes on in the next turn."""

from __future__ import annotations

import os
import signal
import time

import anyio

from tests.backends.copilot.a2a import (
    answer,
    cancel,
    send,
    start,
    state,
    status_text,
    wait_done,
    wait_for_working,
)
from tests.backends.copilot.conftest import AppFactory, SettingsFactory, cli_pids
from tests.support.mock_models.openai_chat import OpenAIChatMock

TELL = "Remember this: the secret word is BANANA."
ASK = "What was the secret word?"
STALL = "MOCK_STALL then wait"


async def test_cancel_stops_the_agent_and_the_context_goes_on(
    copilot_app: AppFactory, mock: OpenAIChatMock
) -> None:
    client = await copilot_app()
    await send(client, TELL)
    task_id = await start(client, STALL)
    stalled = await mock.wait_for_request(STALL)
    await wait_for_working(client, task_id)

    began = time.monotonic()
    canceled = await cancel(client, task_id)
    took = time.monotonic() - began

    assert state(canceled) == "TASK_STATE_CANCELED", canceled
    assert took < 2, f"cancel took {took:.2f} s"
    # The CLI dropped the model call it was in...
    await mock.wait_until(lambda: stalled.disconnected, within=5)
    after = await send(client, ASK)
    # ... made no further request for the canceled turn, and the context still works.
    assert state(after) == "TASK_STATE_COMPLETED", after
    assert answer(after) == "The secret word was BANANA."
    assert len(mock.matching(STALL)) == 1


async def test_the_idle_deadline_stops_a_stalled_agent(
    copilot_app: AppFactory, copilot_settings: SettingsFactory, mock: OpenAIChatMock
) -> None:
    client = await copilot_app(copilot_settings(timeouts={"idle": 1000}))
    await send(client, TELL)

    with anyio.fail_after(10):
        task = await send(client, STALL)

    assert state(task) == "TASK_STATE_FAILED", task
    assert "timeouts.idle" in status_text(task)
    stalled = mock.matching(STALL)[0]
    await mock.wait_until(lambda: stalled.disconnected, within=5)
    after = await send(client, ASK)
    assert answer(after) == "The secret word was BANANA."
    assert len(mock.matching(STALL)) == 1


async def test_a_cli_crash_fails_the_turn_and_the_next_turn_starts_a_new_cli(
    copilot_app: AppFactory, mock: OpenAIChatMock
) -> None:
    client = await copilot_app()
    await send(client, TELL)
    task_id = await start(client, STALL)
    await mock.wait_for_request(STALL)
    await wait_for_working(client, task_id)
    (crashed,) = cli_pids()

    os.kill(crashed, signal.SIGKILL)
    with anyio.fail_after(10):
        failed = await wait_done(client, task_id)

    assert state(failed) == "TASK_STATE_FAILED", failed
    assert "Copilot CLI process exited" in status_text(failed)
    after = await send(client, ASK)
    assert answer(after) == "The secret word was BANANA."
    (restarted,) = cli_pids()
    assert restarted != crashed
