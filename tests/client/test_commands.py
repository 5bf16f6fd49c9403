"""The client commands against our daemon (scripted backend) on every protocol version and
binding the card offers: send (streamed progress, the answer, exit codes), tasks, pending and
answer, watch, cancel, tokens."""

from __future__ import annotations

import json

import anyio
import pytest

from tests.client.conftest import Cli, Serve
from tests.support.scripted import ScriptedBackend

MODES = {
    "card": [],
    "v1.0-jsonrpc": ["--protocol", "1.0", "--binding", "jsonrpc"],
    "v0.3-jsonrpc": ["--protocol", "0.3", "--binding", "jsonrpc"],
    "v1.0-grpc": ["--protocol", "1.0", "--binding", "grpc"],
    "v0.3-grpc": ["--protocol", "0.3", "--binding", "grpc"],
    "v1.0-rest": ["--protocol", "1.0", "--binding", "rest"],
}


@pytest.mark.parametrize("mode", MODES)
async def test_send_streams_progress_then_prints_the_answer(
    cli: Cli, daemon: str, mode: str
) -> None:
    done = await cli("send", daemon, "tool: pytest", *MODES[mode])

    assert done.code == 0, done
    assert done.out.strip() == "ran pytest"
    assert "Running `ls`" in done.err, "the tool step, as it happened"


@pytest.mark.parametrize("mode", MODES)
async def test_an_input_required_answer_exits_3_with_the_question_and_answer_continues(
    cli: Cli, daemon: str, mode: str
) -> None:
    asked = await cli("send", daemon, "ask: which branch?", "--json", *MODES[mode])

    assert asked.code == 3, asked
    task = json.loads(asked.out)
    assert task["state"] == "input-required"
    assert task["question"]["text"] == "which branch?"

    answered = await cli("answer", daemon, task["id"], "main", *MODES[mode])

    assert answered.code == 0, answered
    assert answered.out.strip() == "main"


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [
        ("fail: the disk is full", 1, "failed: the disk is full"),
        ("reject: not my job", 1, "rejected: not my job"),
        ("reply: a direct message", 0, "a direct message"),
    ],
)
async def test_exit_codes_say_how_the_task_ended(
    cli: Cli, daemon: str, text: str, code: int, said: str
) -> None:
    done = await cli("send", daemon, text)

    assert done.code == code, done
    assert said in done.out


async def test_usage_and_connection_errors_exit_2(cli: Cli, daemon: str) -> None:
    nobody = await cli("send", "http://127.0.0.1:9", "hello")
    unknown = await cli("answer", daemon, "no-such-task", "approve")
    usage = await cli("send", daemon)

    assert nobody.code == 2
    assert "cannot read the agent card at http://127.0.0.1:9" in nobody.err
    assert unknown.code == 2
    assert "no-such-task" in unknown.err
    assert usage.code == 2


async def test_a_real_approval_is_pending_with_its_question_and_approve_runs_it(
    cli: Cli, daemon: str, backend: ScriptedBackend
) -> None:
    asked = await cli("send", daemon, "approve: make test", "--context", "ctx-approval")
    assert asked.code == 3, asked
    assert "Run `make test` in the working directory" in asked.out
    assert "approve|approve_always|deny" in asked.err

    pending = await cli("pending", daemon, "--json")
    [waiting] = [t for t in json.loads(pending.out) if t["contextId"] == "ctx-approval"]
    assert waiting["question"]["approval"]["tool"] == "make test"

    done = await cli("answer", daemon, waiting["id"], "approve")

    assert done.code == 0, done
    assert done.out.strip() == "ran make test"
    assert "Running `make test`" in done.err
    assert [a.decision for a in backend.answers] == ["approve"]


async def test_deny_reaches_the_agent(cli: Cli, daemon: str) -> None:
    asked = await cli("send", daemon, "approve: rm -rf /", "--json")
    task_id = json.loads(asked.out)["id"]

    done = await cli("answer", daemon, task_id, "deny")

    assert done.code == 0
    assert "denied" in done.out


async def test_tasks_lists_by_context_and_state(cli: Cli, daemon: str) -> None:
    for text in ("echo: one", "ask: two?"):
        await cli("send", daemon, text, "--context", "ctx-list")
    await cli("send", daemon, "echo: elsewhere", "--context", "ctx-other")

    listed = await cli("tasks", daemon, "--context", "ctx-list", "--json")
    waiting = await cli("tasks", daemon, "--context", "ctx-list", "--state", "input-required")

    assert sorted(t["state"] for t in json.loads(listed.out)) == ["completed", "input-required"]
    assert {t["contextId"] for t in json.loads(listed.out)} == {"ctx-list"}
    assert "two?" in waiting.out
    assert "one" not in waiting.out


async def test_no_wait_returns_at_once_and_watch_follows_to_the_end(
    cli: Cli, daemon: str, backend: ScriptedBackend
) -> None:
    sent = await cli("send", daemon, "block", "--no-wait", "--json")
    assert sent.code == 0, sent
    task = json.loads(sent.out)
    assert task["state"] in ("submitted", "working")
    await backend.entered(task["id"]).wait()

    async with anyio.create_task_group() as tg:
        watched: list[object] = []

        async def watch() -> None:
            watched.append(await cli("watch", daemon, task["id"]))

        tg.start_soon(watch)
        await anyio.sleep(3)  # the watcher subscribes; releasing earlier only shortens the test
        backend.release(task["id"])
    [done] = watched

    assert done.code == 0, done  # type: ignore[attr-defined]
    assert done.out.strip() == "released"  # type: ignore[attr-defined]


async def test_cancel_stops_the_task(cli: Cli, daemon: str, backend: ScriptedBackend) -> None:
    sent = await cli("send", daemon, "block", "--no-wait", "--json")
    task_id = json.loads(sent.out)["id"]
    await backend.entered(task_id).wait()

    canceled = await cli("cancel", daemon, task_id)
    again = await cli("cancel", daemon, task_id)

    assert canceled.code == 0, canceled
    assert canceled.out.strip() == f"task {task_id}: canceled"
    assert backend.interrupted == [task_id]
    assert again.code == 2
    assert "cannot cancel task" in again.err


async def test_the_token_comes_from_the_flag_or_a2a_token(cli: Cli, serve: Serve) -> None:
    token = "a-long-enough-test-token-1234"  # noqa: S105 - a test token
    url = await serve(server={"auth": {"tokens": [{"token": token, "principal": "me"}]}})

    refused = await cli("send", url, "echo: hi")
    by_flag = await cli("send", url, "echo: hi", "--token", token)
    by_env = await cli("send", url, "echo: hi", "--binding", "grpc", env={"A2A_TOKEN": token})

    assert refused.code == 2
    assert "unauthorized" in refused.err.lower() or "401" in refused.err
    assert (by_flag.code, by_flag.out.strip()) == (0, "hi")
    assert (by_env.code, by_env.out.strip()) == (0, "hi")
