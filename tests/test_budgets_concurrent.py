"""Budgets hold under concurrent sends, on every binding (JSON-RPC v1.0 and v0.3, gRPC).

Twenty sends arrive at once while the turns they start are held in the backend (the scripted
`paid:` turn costs 1 USD and 12 tokens, and waits on the backend's gate), so no usage is known
while they are admitted: admission alone must refuse what the budget cannot pay for. A
caller's estimate comes from the daemon's earlier turns (another caller's warm-up turn here)
or the per-turn maximum; with neither, a turn reserves all that is left.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc

from tests.conftest import Client, MakeClient, make_settings
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend
from tests.support.wire import call, user_message

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef0"
TERMINAL = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}
SENDS = 20


@dataclass
class Sent:
    task_id: str | None  # None: refused
    error: str = ""


Send = Callable[[str, int], Awaitable[Sent]]


def _headers(token: str) -> dict[str, str]:
    return {"A2A-Version": "1.0", "Authorization": f"Bearer {token}"}


async def _send_v1(client: Client, context: str, n: int) -> Sent:
    body = await call(
        client,
        "SendMessage",
        {
            "message": user_message("paid: ok", contextId=context, messageId=f"m{n}"),
            "configuration": {"returnImmediately": True},
        },
        headers=_headers(ALICE),
    )
    if "error" in body:
        assert body["error"]["code"] == -32004, body
        return Sent(None, body["error"]["message"])
    return Sent(body["result"]["task"]["id"])


async def _send_v03(client: Client, context: str, n: int) -> Sent:
    message = {
        "kind": "message",
        "role": "user",
        "messageId": f"m{n}",
        "contextId": context,
        "parts": [{"kind": "text", "text": "paid: ok"}],
    }
    response = await client.post(
        "/",
        json={
            "jsonrpc": "2.0",
            "id": n,
            "method": "message/send",
            "params": {"message": message, "configuration": {"blocking": False}},
        },
        headers={**_headers(ALICE), "A2A-Version": "0.3"},
    )
    body: dict[str, Any] = await response.json()
    if "error" in body:
        assert body["error"]["code"] == -32004, body
        return Sent(None, body["error"]["message"])
    return Sent(body["result"]["id"])


async def _grpc_sender(client: Client) -> tuple[grpc.aio.Channel, Send]:
    card = await (await client.get("/.well-known/agent-card.json")).json()
    address = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
    channel = grpc.aio.insecure_channel(address)
    stub = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]  # generated code
    metadata = (("a2a-version", "1.0"), ("authorization", f"Bearer {ALICE}"))

    async def send(context: str, n: int) -> Sent:
        request = a2a_pb2.SendMessageRequest(
            message=a2a_pb2.Message(
                message_id=f"m{n}",
                context_id=context,
                role=a2a_pb2.ROLE_USER,
                parts=[a2a_pb2.Part(text="paid: ok")],
            ),
            configuration=a2a_pb2.SendMessageConfiguration(return_immediately=True),
        )
        try:
            return Sent((await stub.SendMessage(request, metadata=metadata)).task.id)
        except grpc.aio.AioRpcError as exc:
            assert exc.code() == grpc.StatusCode.RESOURCE_EXHAUSTED, exc
            return Sent(None, str(exc.details()))

    return channel, send


async def _state(client: Client, task_id: str) -> str:
    body = await call(client, "GetTask", {"id": task_id}, headers=_headers(ALICE))
    return str(body["result"]["status"]["state"])


async def _ended(client: Client, task_id: str) -> str:
    """The task's state once it is over."""
    return await until(lambda: _state(client, task_id), lambda state: state in TERMINAL)


async def _race(
    client: Client, backend: ScriptedBackend, binding: str, contexts: list[str]
) -> tuple[list[Sent], list[str]]:
    """Send one `paid:` message per entry of `contexts` at once, over `binding`, while the
    backend holds every turn; then let them run and return what each send got and the end
    state of each admitted task."""
    channel = None
    send: Send
    if binding == "grpc":
        channel, send = await _grpc_sender(client)
    else:
        sender = _send_v1 if binding == "jsonrpc-1.0" else _send_v03

        async def send(context: str, n: int) -> Sent:
            return await sender(client, context, n)

    backend.gate = anyio.Event()
    sent: list[Sent] = []

    async def one(context: str, n: int) -> None:
        sent.append(await send(context, n))

    try:
        async with anyio.create_task_group() as group:
            for n, context in enumerate(contexts):
                group.start_soon(one, context, n)
        backend.gate.set()
        states = [
            await _ended(client, result.task_id) for result in sent if result.task_id is not None
        ]
    finally:
        backend.gate.set()
        if channel is not None:
            await channel.close()
    return sent, states


def _usage_rows(path: Path, principal: str) -> list[tuple[float, int]]:
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT cost_usd, input_tokens + output_tokens FROM turn_usage WHERE principal = ?",
            (principal,),
        ).fetchall()
    return [(float(cost), int(tokens)) for cost, tokens in rows]


async def _daemon(make_client: MakeClient, tmp_path: Path, budget: dict[str, Any]) -> Client:
    settings = make_settings(
        storage={"kind": "sqlite", "path": str(tmp_path / "tasks.sqlite3")},
        server={
            "grpcPort": 0,
            "auth": {
                "tokens": [
                    {"token": ALICE, "principal": "alice"},
                    {"token": BOB, "principal": "bob"},
                ]
            },
        },
        budget=budget,
    )
    return await make_client(settings)


async def _warm_up(client: Client) -> None:
    """Bob's one turn (1 USD, 12 tokens): what a turn costs on this daemon is known."""
    body = await call(
        client,
        "SendMessage",
        {"message": user_message("paid: warm", contextId="bob-ctx")},
        headers=_headers(BOB),
    )
    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", body


BINDINGS = ["jsonrpc-1.0", "jsonrpc-0.3", "grpc"]
# (budget, the key a refusal names, whether all sends share one context)
CASES = [
    ({"perPrincipal": {"maxCostUsd": 3}}, "budget.perPrincipal.maxCostUsd", False),
    ({"perContext": {"maxCostUsd": 3}}, "budget.perContext.maxCostUsd", True),
    ({"perPrincipal": {"maxTokens": 36}}, "budget.perPrincipal.maxTokens", False),
    ({"perContext": {"maxTokens": 36}}, "budget.perContext.maxTokens", True),
    ({"perPrincipal": {"maxTurns": 3}}, "budget.perPrincipal.maxTurns", False),
    ({"perContext": {"maxTurns": 3}}, "budget.perContext.maxTurns", True),
]


@pytest.mark.parametrize("binding", BINDINGS)
@pytest.mark.parametrize(("budget", "key", "shared"), CASES)
async def test_twenty_concurrent_sends_start_exactly_what_the_budget_pays_for(
    make_client: MakeClient,
    backend: ScriptedBackend,
    tmp_path: Path,
    binding: str,
    budget: dict[str, Any],
    key: str,
    shared: bool,
) -> None:
    client = await _daemon(make_client, tmp_path, budget)
    await _warm_up(client)
    contexts = ["ctx-shared"] * SENDS if shared else [f"ctx-{n}" for n in range(SENDS)]

    sent, states = await _race(client, backend, binding, contexts)

    refused = [s for s in sent if s.task_id is None]
    assert len(sent) == SENDS
    assert len(refused) == SENDS - 3, [s.error for s in refused][:3]
    assert states == ["TASK_STATE_COMPLETED"] * 3
    assert all(key in s.error for s in refused), refused[0].error
    rows = _usage_rows(tmp_path / "tasks.sqlite3", "alice")
    assert len(rows) == 3
    assert sum(cost for cost, _ in rows) <= 3
    assert sum(tokens for _, tokens in rows) == 36


async def test_with_nothing_known_a_turn_reserves_all_that_is_left(
    make_client: MakeClient, backend: ScriptedBackend, tmp_path: Path
) -> None:
    """No turn has run on this daemon and no per-turn maximum is set: what a turn costs is
    unknown, so the first one holds the whole budget until its usage is known."""
    client = await _daemon(make_client, tmp_path, {"perPrincipal": {"maxCostUsd": 3}})

    sent, states = await _race(client, backend, "jsonrpc-1.0", [f"c{n}" for n in range(SENDS)])
    assert states == ["TASK_STATE_COMPLETED"]
    assert sum(s.task_id is None for s in sent) == SENDS - 1
    assert "held in full" in next(s.error for s in sent if s.task_id is None)

    # Now a turn is known to cost 1 USD: two more fit in what is left.
    sent, states = await _race(client, backend, "jsonrpc-1.0", [f"d{n}" for n in range(SENDS)])
    assert states == ["TASK_STATE_COMPLETED"] * 2
    assert sum(cost for cost, _ in _usage_rows(tmp_path / "tasks.sqlite3", "alice")) == 3
    spent = await _send_v1(client, "later", 99)
    assert spent.task_id is None
    assert "is spent" in spent.error


async def test_a_per_turn_maximum_is_what_each_turn_reserves(
    make_client: MakeClient, backend: ScriptedBackend, tmp_path: Path
) -> None:
    budget = {"perTurn": {"maxCostUsd": 1}, "perPrincipal": {"maxCostUsd": 3}}
    client = await _daemon(make_client, tmp_path, budget)

    sent, states = await _race(client, backend, "jsonrpc-1.0", [f"c{n}" for n in range(SENDS)])

    assert states == ["TASK_STATE_COMPLETED"] * 3
    assert sum(s.task_id is None for s in sent) == SENDS - 3
