"""A turn's usage row is durable before its answer leaves: a real daemon killed with SIGKILL
the moment the answers arrive has every answered turn's row after its restart (SQLite and
PostgreSQL), so the caller's `maxTurns` still refuses one turn more than were answered."""

from __future__ import annotations

from typing import Any

import anyio
import httpx

from tests.support.daemon import MakeDaemon

V1 = {"A2A-Version": "1.0"}
ROUNDS = 5
CONTEXTS = 2


async def _send(http: httpx.AsyncClient, url: str, context: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": f"m-{context}",
                "contextId": context,
                "role": "ROLE_USER",
                "parts": [{"text": "paid: ok"}],
            }
        },
    }
    response = await http.post(f"{url}/a2a/jsonrpc", json=body, headers=V1)
    answer: dict[str, Any] = response.json()
    return answer


async def test_an_answered_turns_usage_survives_a_sigkill_right_after_the_answer(
    durable_storage: dict[str, Any], daemons: MakeDaemon
) -> None:
    daemon = daemons(
        {
            "backend": "tests.support.scripted:ScriptedBackend",
            "storage": durable_storage,
            "budget": {"perPrincipal": {"maxTurns": ROUNDS * CONTEXTS}},
        }
    )
    answered: list[str] = []
    async with httpx.AsyncClient(timeout=60) as http:
        for round_ in range(ROUNDS):
            url = daemon.start()
            contexts = [f"r{round_}-c{n}" for n in range(CONTEXTS)]
            answers: dict[str, dict[str, Any]] = {}

            async def one(context: str, url: str = url, answers: Any = answers) -> None:
                answers[context] = await _send(http, url, context)

            async with anyio.create_task_group() as group:
                for context in contexts:
                    group.start_soon(one, context)
            daemon.kill()  # the moment the last answer is in
            for context in contexts:
                state = answers[context]["result"]["task"]["status"]["state"]
                assert state == "TASK_STATE_COMPLETED", answers[context]
            answered += contexts

        url = daemon.start()
        one_more = await _send(http, url, "one-more")
        daemon.stop()

    assert len(answered) == ROUNDS * CONTEXTS
    # Every answered turn's row is there: the caller has used all its turns.
    assert "budget.perPrincipal.maxTurns" in str(one_more.get("error")), one_more
