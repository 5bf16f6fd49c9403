"""`/metrics` after real traffic on the real app: parsed with prometheus_client's own parser,
its counters match the requests and turns made."""

from __future__ import annotations

import secrets

import grpc
import pytest

from tests.conftest import MakeClient, make_settings
from tests.support.metrics import scrape, value
from tests.support.polling import until
from tests.support.wire import V1, call, user_message


async def test_the_counters_match_the_requests_and_turns_made(make_client: MakeClient) -> None:
    client = await make_client()
    for i in range(3):
        await call(
            client, "SendMessage", {"message": user_message("metered: ok", messageId=f"m{i}")}
        )
    await call(client, "SendMessage", {"message": user_message("fail: broken")})
    missing = await call(client, "GetTask", {"id": "no-such-task"})
    rest = await client.post(
        "/a2a/rest/message:send", json={"message": user_message("echo: hi")}, headers=V1
    )
    legacy = await client.post(
        "/",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "message": {
                    **user_message("echo: old"),
                    "kind": "message",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "echo: old"}],
                }
            },
        },
        headers={"A2A-Version": "0.3"},
    )

    # A blocking send returns once its task settles; the turn is counted as it ends, just after.
    samples = await until(
        lambda: scrape(client),
        lambda s: value(s, "a2a_turn_duration_seconds_count", backend="scripted") >= 6,
    )

    assert "error" in missing
    assert rest.status == 200
    assert legacy.status == 200
    ok = {"method": "SendMessage", "version": "1.0", "outcome": "ok"}
    assert value(samples, "a2a_requests_total", binding="jsonrpc", **ok) == 4
    assert value(samples, "a2a_requests_total", binding="rest", **ok) == 1
    assert (
        value(
            samples,
            "a2a_requests_total",
            method="GetTask",
            version="1.0",
            binding="jsonrpc",
            outcome="TaskNotFoundError",
        )
        == 1
    )
    assert (
        value(
            samples,
            "a2a_requests_total",
            method="message/send",
            version="0.3",
            binding="jsonrpc",
            outcome="ok",
        )
        == 1
    )
    assert value(samples, "a2a_turns_total", backend="scripted", outcome="completed") == 5
    assert value(samples, "a2a_turns_total", backend="scripted", outcome="failed") == 1
    assert value(samples, "a2a_turn_duration_seconds_count", backend="scripted") == 6
    assert value(samples, "a2a_tokens_total", backend="scripted", kind="input") == 30
    assert value(samples, "a2a_tokens_total", backend="scripted", kind="output") == 6
    assert value(samples, "a2a_turns_in_flight") == 0
    assert value(samples, "a2a_turns_queued") == 0
    assert value(samples, "a2a_turn_queue_wait_seconds_count") == 6
    assert any(name == "a2a_build_info" for name, _ in samples)


async def test_with_a_metrics_token_the_scrape_needs_it(make_client: MakeClient) -> None:
    client = await make_client(
        make_settings(metrics={"token": "metrics-token-long-enough-0123456789"})
    )

    refused = await client.get("/metrics")
    samples = await scrape(client, Authorization="Bearer metrics-token-long-enough-0123456789")

    assert refused.status == 401
    assert any(name == "a2a_build_info" for name, _ in samples)


async def test_metrics_can_be_turned_off(make_client: MakeClient) -> None:
    client = await make_client(make_settings(metrics={"enabled": False}))

    assert (await client.get("/metrics")).status in (401, 404)


async def test_caller_chosen_method_names_never_become_label_values(
    make_client: MakeClient,
) -> None:
    """500 made-up methods over every way in leave the series count where it was: a name the
    daemon does not know is counted as `other`."""
    client = await make_client(make_settings(server={"grpcPort": 0}))
    await call(client, "GetTask", {"id": "warm-up"})
    before = await scrape(client)
    card = await (await client.get("/.well-known/agent-card.json")).json()
    address = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")

    async with grpc.aio.insecure_channel(address) as channel:
        for i in range(125):
            name = secrets.token_hex(6)
            await call(client, f"Made{name}", {})
            legacy = {"jsonrpc": "2.0", "id": i, "method": f"tasks/{name}", "params": {}}
            await client.post("/", json=legacy, headers={"A2A-Version": "0.3"})
            await client.get(f"/a2a/rest/{name}", headers=V1)
            await client.post(f"/v1/{name}:do", json={})
            unknown: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes] = channel.unary_unary(
                f"/lf.a2a.v1.A2AService/{name}"
            )
            with pytest.raises(grpc.aio.AioRpcError):
                await unknown(b"", metadata=(("a2a-version", "1.0"),))
    after = await scrape(client)

    grown = {name for name, _ in after} - {name for name, _ in before}
    # A few label sets (`other` per binding and version), each a histogram: not 500 of them.
    assert len(after) - len(before) <= 100, sorted(set(after) - set(before))[:20]
    assert not grown, grown
    other = value(
        after,
        "a2a_requests_total",
        method="other",
        version="1.0",
        binding="jsonrpc",
        outcome="MethodNotFoundError",
    )
    assert other == 250
