"""Budgets on the real app with the scripted backend (`metered:` reports 12 tokens a turn): a
turn over a budget is stopped and FAILED naming it, the next message is refused, other
contexts still run, and the totals survive a restart (SQLite)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from tests.conftest import MakeClient, make_settings
from tests.support.wire import call, user_message

FAILED, COMPLETED = "TASK_STATE_FAILED", "TASK_STATE_COMPLETED"


async def _send(client: Any, context: str, text: str = "metered: ok") -> dict[str, Any]:
    body = await call(client, "SendMessage", {"message": user_message(text, contextId=context)})
    return body


def _text(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in task["status"].get("message", {}).get("parts", []))


async def test_a_turn_over_the_context_budget_fails_and_the_next_is_refused(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(budget={"perContext": {"maxTokens": 20}}))

    first = (await _send(client, "ctx-a"))["result"]["task"]
    second = (await _send(client, "ctx-a"))["result"]["task"]
    third = await _send(client, "ctx-a")
    other = (await _send(client, "ctx-b"))["result"]["task"]

    assert first["status"]["state"] == COMPLETED
    assert first["metadata"]["a2aWrapper"]["usage"]["inputTokens"] == 10
    assert second["status"]["state"] == FAILED, second
    assert "budget.perContext.maxTokens" in _text(second)
    assert third["error"]["code"] == -32004
    assert "budget.perContext.maxTokens" in third["error"]["message"]
    assert other["status"]["state"] == COMPLETED


async def test_a_turn_over_the_per_turn_budget_fails(make_client: MakeClient) -> None:
    client = await make_client(make_settings(budget={"perTurn": {"maxTokens": 5}}))

    task = (await _send(client, "ctx-a"))["result"]["task"]
    again = (await _send(client, "ctx-a"))["result"]["task"]

    assert task["status"]["state"] == FAILED
    assert "budget.perTurn.maxTokens" in _text(task)
    assert again["status"]["state"] == FAILED, "a per-turn budget refuses no later turn"


async def test_the_principal_budget_counts_turns_across_contexts(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(budget={"perPrincipal": {"maxTurns": 2}}))

    runs = [(await _send(client, f"ctx-{i}", "echo: hi"))["result"]["task"] for i in range(2)]
    refused = await _send(client, "ctx-9", "echo: hi")

    assert [t["status"]["state"] for t in runs] == [COMPLETED, COMPLETED]
    assert refused["error"]["code"] == -32004
    assert "budget.perPrincipal.maxTurns" in refused["error"]["message"]


async def test_spent_budgets_survive_a_restart(make_client: MakeClient, tmp_path: Path) -> None:
    settings = make_settings(
        storage={"kind": "sqlite", "path": str(tmp_path / "tasks.sqlite3")},
        budget={"perContext": {"maxTokens": 12}},
    )
    client = await make_client(settings)
    assert (await _send(client, "ctx-a"))["result"]["task"]["status"]["state"] == COMPLETED
    await client.close()
    with sqlite3.connect(tmp_path / "tasks.sqlite3") as db:
        # A row nobody can read (hand-edited, say) is skipped, never fatal at start.
        db.execute(
            "INSERT INTO turn_usage VALUES ('t', 'x', 'ctx-b', 'soon', -1, 0, 0, 0, 'free', 5)"
        )

    restarted = await make_client(settings)
    refused = await _send(restarted, "ctx-a")

    assert refused["error"]["code"] == -32004
    assert (await _send(restarted, "ctx-b"))["result"]["task"]["status"]["state"] == COMPLETED
