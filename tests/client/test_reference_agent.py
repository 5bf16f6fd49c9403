"""The client commands against an agent that is not ours: the a2a-sdk 1.3.0 server
(tests/client/reference_agent.py). The card decides the protocol and the binding."""

from __future__ import annotations

import json

from tests.client.conftest import Cli


async def test_send_streams_and_prints_the_answer(cli: Cli, reference: str) -> None:
    done = await cli("send", reference, "echo: from the reference")

    assert done.code == 0, done
    assert done.out.strip() == "from the reference"
    assert "thinking it over" in done.err, "the working update, streamed"


async def test_a_question_is_pending_and_the_answer_completes_it(cli: Cli, reference: str) -> None:
    asked = await cli("send", reference, "ask: which colour?", "--json")
    assert asked.code == 3, asked
    task = json.loads(asked.out)
    assert task["question"]["text"] == "which colour?"

    pending = await cli("pending", reference)
    listed = await cli("tasks", reference, "--context", task["contextId"], "--json")
    answered = await cli("answer", reference, task["id"], "blue")

    assert task["id"] in pending.out and "which colour?" in pending.out
    assert [t["id"] for t in json.loads(listed.out)] == [task["id"]]
    assert answered.code == 0, answered
    assert answered.out.strip() == "you said: blue"


async def test_no_wait_then_cancel(cli: Cli, reference: str) -> None:
    sent = await cli("send", reference, "block", "--no-wait", "--json")
    assert sent.code == 0, sent
    task_id = json.loads(sent.out)["id"]

    canceled = await cli("cancel", reference, task_id)
    shown = await cli("tasks", reference, "--state", "canceled", "--json")

    assert canceled.code == 0, canceled
    assert task_id in [t["id"] for t in json.loads(shown.out)]
