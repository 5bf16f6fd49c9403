"""E2E, stopping turns: cancel, the idle deadline and a CLI crash each stop the real agent, and
the conversation goes on in the next turn."""

from __future__ import annotations

import os
import signal

import anyio

from harness.mock_models.openai_chat import OpenAIChatMock
from tests.backends.copilot.a2a import (
    answer,
    send,
    start,
    state,
    status_text,
    wait_done,
    wait_for_working,
)
from tests.backends.copilot.conftest import AppFactory, cli_pids

TELL = "Remember this: the secret word is BANANA."
ASK = "What was the secret word?"
STALL = "MOCK_STALL then wait"


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
