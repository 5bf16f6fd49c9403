"""`console.enabled`: on by default for a loopback bind, off by default otherwise, and off
when set false (then `/console` is no route at all)."""

from __future__ import annotations

from typing import Any

from core.bindings.http.console import console_enabled
from tests.conftest import MakeClient, make_settings

PUBLIC = "192.0.2.10"  # a documentation address: not loopback
TOKENS = {"auth": {"tokens": [{"token": "a-long-enough-token-0123", "principal": "p"}]}}


def test_on_by_default_only_for_a_loopback_bind() -> None:
    assert console_enabled(make_settings())
    assert not console_enabled(make_settings(server={"host": PUBLIC, **TOKENS}))
    public_on: dict[str, Any] = {"enabled": True}
    assert console_enabled(make_settings(server={"host": PUBLIC, **TOKENS}, console=public_on))
    assert not console_enabled(make_settings(console={"enabled": False}))


async def test_a_loopback_daemon_without_tokens_signs_in_the_anonymous_principal(
    make_client: MakeClient,
) -> None:
    client = await make_client()

    page = await client.get("/console")

    assert page.status == 200
    assert "signed in as <b>anonymous</b>" in await page.text()
    cookie = page.history[0].headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/console" in cookie


async def test_turned_off_there_is_no_console(make_client: MakeClient) -> None:
    client = await make_client(make_settings(console={"enabled": False}))

    assert (await client.get("/console")).status == 404
    assert (await client.get("/console/static/console.js")).status == 404


async def test_with_tokens_it_asks_for_one_and_refuses_a_wrong_one(
    make_client: MakeClient,
) -> None:
    client = await make_client(make_settings(server=TOKENS))

    first = await client.get("/console", allow_redirects=False)
    wrong = await client.post("/console/login", data={"token": "not-the-token-at-all"})
    right = await client.post(
        "/console/login", data={"token": "a-long-enough-token-0123"}, allow_redirects=False
    )

    assert first.status == 303 and first.headers["Location"] == "/console/login"
    assert wrong.status == 401 and "That token is not valid." in await wrong.text()
    assert right.status == 303 and "a2a_console=" in right.headers["Set-Cookie"]


async def test_usage_and_the_budget_left_per_context_and_principal(
    make_client: MakeClient,
) -> None:
    budget = {"perContext": {"maxTokens": 100}, "perPrincipal": {"maxTurns": 5}}
    client = await make_client(make_settings(budget=budget))
    message = {
        "messageId": "m-1",
        "role": "ROLE_USER",
        "parts": [{"text": "metered: a|b"}],
        "contextId": "ctx-spent",
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    sent = await client.post("/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"})
    assert "result" in await sent.json()

    page = await (await client.get("/console")).text()

    usage = page[page.index('<section id="usage">') :]
    # The metered turn used 12 tokens: 88 of the context's 100 are left, 4 of 5 turns.
    principal = usage[usage.index("principal anonymous") :].split("</tr>")[0]
    context = usage[usage.index("context ctx-spent") :].split("</tr>")[0]
    assert [cell.split("<")[0] for cell in principal.split("<td>")[1:]] == [
        "$0.0000", "12", "1", "-", "-", "4",
    ]  # fmt: skip
    assert [cell.split("<")[0] for cell in context.split("<td>")[1:]] == [
        "$0.0000", "12", "1", "-", "88", "-",
    ]  # fmt: skip
