"""The engine's side of agent health, on the real app with the scripted backend: a provider's
refusal of the credentials leaves the task AUTH_REQUIRED with the fix, `/ready` says
`credentials` until a turn gets past them, and the task's `a2aWrapper.error` and the metrics
name each refusal's kind (a rate limit with when to retry)."""

from __future__ import annotations

from typing import Any

from core.backend import GENERIC_FIX
from tests.conftest import MakeClient
from tests.support.metrics import scrape, value
from tests.support.polling import until
from tests.support.wire import call, user_message


def _task(body: dict[str, Any]) -> dict[str, Any]:
    task: dict[str, Any] = body["result"]["task"]
    return task


def _section(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return section


def _status(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in task["status"]["message"]["parts"])


async def test_refused_credentials_ask_for_the_fix_until_a_turn_gets_past_them(
    make_client: MakeClient,
) -> None:
    client = await make_client()
    first = _task(await call(client, "SendMessage", {"message": user_message("echo: hi")}))
    refused = _task(
        await call(
            client,
            "SendMessage",
            {
                "message": user_message(
                    "refuse: auth invalid x-api-key sk-ant-leaked",
                    messageId="m2",
                    contextId=first["contextId"],
                )
            },
        )
    )

    assert refused["status"]["state"] == "TASK_STATE_AUTH_REQUIRED"
    assert _section(refused)["error"]["kind"] == "auth"
    assert GENERIC_FIX in _status(refused)
    assert _status(refused).endswith(f"(error id {_section(refused)['error']['errorId']}).")
    assert "sk-ant-leaked" not in str([refused["status"], refused["metadata"]])
    not_ready = await client.get("/ready")
    assert not_ready.status == 503
    assert (await not_ready.json())["reason"] == "credentials"

    fixed = _task(
        await call(
            client,
            "SendMessage",
            {
                "message": user_message(
                    "echo: fixed",
                    messageId="m3",
                    taskId=refused["id"],
                    contextId=refused["contextId"],
                )
            },
        )
    )

    assert fixed["id"] == refused["id"]
    assert fixed["status"]["state"] == "TASK_STATE_COMPLETED"
    assert _section(fixed)["sessionId"] == _section(first)["sessionId"]
    assert "error" not in _section(fixed)
    assert (await client.get("/ready")).status == 200


async def test_each_refusal_is_named_in_the_task_and_counted_by_kind(
    make_client: MakeClient,
) -> None:
    client = await make_client()
    said = {
        "rateLimit": "Rate limit reached. Please try again in 20s.",
        "quota": "You exceeded your current quota",
        "upstream": "overloaded_error",
    }
    tasks = {}
    for n, (kind, words) in enumerate(said.items()):
        message = user_message(f"refuse: {kind} {words}", messageId=f"m{n}")
        tasks[kind] = _task(await call(client, "SendMessage", {"message": message}))

    for kind, task in tasks.items():
        assert task["status"]["state"] == "TASK_STATE_FAILED", task
        assert _section(task)["error"]["kind"] == kind
        assert said[kind] not in str([task["status"], task["metadata"]])
    assert _section(tasks["rateLimit"])["error"]["retryAfter"] == 20
    assert "Try again in 20 s." in _status(tasks["rateLimit"])
    assert (await client.get("/ready")).status == 200, "the credentials were taken"
    samples = await until(
        lambda: scrape(client),
        lambda s: value(s, "a2a_upstream_refusals_total", backend="scripted", kind="quota") >= 1,
    )
    for kind in said:
        assert value(samples, "a2a_upstream_refusals_total", backend="scripted", kind=kind) == 1
