"""A context budget with the real Claude Code CLI on the mock: the cost is Claude Code's own
(from the tokens the mock reports). The turn that goes over `budget.perContext.maxCostUsd` is
stopped and FAILED naming the budget, the next message on that context is refused, and another
context still runs; the metrics show the cost and the warm agents."""

from __future__ import annotations

import uuid

from harness.mock_models.anthropic import AnthropicMock, Reply
from tests.backends.claude.conftest import COMPLETED, FAILED, ClaudeEnv, StartDaemon, send
from tests.support.metrics import scrape, value
from tests.support.polling import until
from tests.support.wire import call, user_message

# About 10 000 output tokens as the mock counts them (~0.15 USD at Sonnet's price); a short
# answer costs far below a cent.
LONG = "All work and no play. " * 1800
BUDGET_USD = 0.05


async def test_the_turn_over_the_context_budget_fails_and_the_context_is_closed(
    start_daemon: StartDaemon, claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    mock.on("write a lot", Reply(text=LONG))
    mock.on("say hi", Reply(text="hi"))
    client = await start_daemon(
        claude_env.settings(budget={"perContext": {"maxCostUsd": BUDGET_USD}})
    )

    small = await send(client, "say hi", "ctx-spent")
    spent = await send(client, "write a lot", "ctx-spent")
    message = user_message("say hi", contextId="ctx-spent", messageId=str(uuid.uuid4()))
    refused = await call(client, "SendMessage", {"message": message})
    other = await send(client, "say hi", "ctx-other")

    assert small["status"]["state"] == COMPLETED, small
    cost = small["metadata"]["a2aWrapper"]["usage"]["costUsd"]
    assert 0 < cost < BUDGET_USD
    assert spent["status"]["state"] == FAILED, spent
    reason = spent["status"]["message"]["parts"][0]["text"]
    assert "budget.perContext.maxCostUsd" in reason
    assert refused["error"]["code"] == -32004, refused
    assert "budget.perContext.maxCostUsd" in refused["error"]["message"]
    assert other["status"]["state"] == COMPLETED, other
    samples = await until(
        lambda: scrape(client),
        lambda s: value(s, "a2a_turns_total", backend="claude", outcome="completed") >= 2,
    )
    assert value(samples, "a2a_cost_usd_total", backend="claude") > BUDGET_USD
    assert value(samples, "a2a_turns_total", backend="claude", outcome="failed") == 1
    assert value(samples, "a2a_sessions_warm") >= 1
