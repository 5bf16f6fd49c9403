"""`/metrics` after real traffic on the real app: parsed with prometheus_client's own parser,
its counters match the requests and turns made."""

from __future__ import annotations

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
