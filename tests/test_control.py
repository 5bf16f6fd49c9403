"""Conversation control on every binding (issue 37, docs/protocol.md#conversation-control),
with the echo backend as the agent that can do everything and the scripted one as an agent
that declares nothing: per-message options, steer, the visible queue, fork, and the protocol's
own error for each bad request."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient

from core.backend import Turn
from core.bindings.http.keys import OPERATIONS
from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from tests.conftest import make_settings
from tests.support.bindings import BINDINGS, Caller, Refused, Task
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend
from wrappers.echo import EchoBackend
from wrappers.echo.config import EchoConfig

ALICE, BOB = "alice-token-0123456789abcdef", "bob-token-0123456789abcdef"
COMPLETED = "TASK_STATE_COMPLETED"
SUBMITTED = "TASK_STATE_SUBMITTED"
WORKING = "TASK_STATE_WORKING"
Make = Callable[..., Awaitable[tuple[Caller, Caller]]]


class RecordingEcho(EchoBackend):
    """The echo agent, keeping every Turn it was given."""

    def __init__(self, config: EchoConfig) -> None:
        super().__init__(config)
        self.turns: list[Turn] = []

    def run_turn(self, turn: Turn) -> Any:
        self.turns.append(turn)
        return super().run_turn(turn)


@pytest.fixture
def make(aiohttp_client: Callable[..., Awaitable[TestClient[Any, Any]]], tmp_path: Path) -> Make:
    """`make(binding, scripted=False)`: the app (echo, or the scripted backend) and a caller
    for alice and one for bob on `binding`."""

    async def made(
        binding: str, *, scripted: bool = False, ask: bool = False
    ) -> tuple[Caller, Caller]:
        tokens = [{"token": ALICE, "principal": "alice"}, {"token": BOB, "principal": "bob"}]
        settings = make_settings(
            server={"grpcPort": 0, "auth": {"tokens": tokens}},
            turnOptions={"allow": {"models": ["m-small", "m-large"]}},
            approvals={"mode": "ask" if ask else "policy"},
        )
        work = tmp_path / "work"
        work.mkdir(exist_ok=True)
        backend: Any = (
            ScriptedBackend()
            if scripted
            else RecordingEcho(EchoConfig(working_directory=work, chunk_delay=0))
        )
        client = await aiohttp_client(
            create_app(settings, backend=backend, store=InMemoryTaskStore())
        )
        card = await (
            await client.get(
                "/.well-known/agent-card.json", headers={"Authorization": f"Bearer {ALICE}"}
            )
        ).json()
        grpc = next(i["url"] for i in card["supportedInterfaces"] if i["protocolBinding"] == "GRPC")
        return Caller(binding, client, ALICE, grpc, backend), Caller(binding, client, BOB, grpc)

    return made


def _task(answer: Task | Refused) -> Task:
    assert not isinstance(answer, Refused), answer
    return answer


def _refused(answer: Task | Refused, reason: str) -> Refused:
    assert isinstance(answer, Refused), answer
    assert answer.reason == reason, answer
    return answer


def _section(task: Task) -> dict[str, Any]:
    section: dict[str, Any] = (task.get("metadata") or {}).get("a2aWrapper") or {}
    return section


def _text(task: Task) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts") or [] for p in a["parts"])


async def _until(caller: Caller, task_id: str, state: str) -> Task:
    task = await until(lambda: caller.get(task_id), lambda t: t["status"]["state"] == state)
    assert task["status"]["state"] == state, task
    return task


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_message_chooses_its_turns_model_effort_and_mode(make: Make, binding: str) -> None:
    alice, _ = await make(binding)
    chosen = {"model": "m-large", "effort": "high", "mode": "plan"}

    task = _task(await alice.send("hello there", metadata={"a2aWrapper": chosen}))
    inline = _task(await alice.send("hi", message_metadata={"a2aWrapper": {"effort": "low"}}))

    assert task["status"]["state"] == COMPLETED
    assert _section(task)["options"] == chosen
    assert _section(task)["usage"]["model"] == "m-large"
    assert _section(inline)["options"] == {"effort": "low"}
    assert "options" not in _section(_task(await alice.send("plain")))


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_read_only_turn_does_not_write(make: Make, binding: str, tmp_path: Path) -> None:
    alice, _ = await make(binding)

    task = _task(
        await alice.send("write: proof.txt\nedited", metadata={"a2aWrapper": {"mode": "readOnly"}})
    )

    assert task["status"]["state"] == COMPLETED
    assert "Not written" in _text(task)
    assert not (tmp_path / "work" / "proof.txt").exists()


@pytest.mark.parametrize("binding", BINDINGS)
async def test_options_outside_what_callers_may_choose_are_invalid_params(
    make: Make, binding: str
) -> None:
    alice, _ = await make(binding)

    mode = _refused(
        await alice.send("hi", metadata={"a2aWrapper": {"mode": "yolo"}}), "INVALID_PARAMS"
    )
    model = _refused(
        await alice.send("hi", metadata={"a2aWrapper": {"model": "m-huge"}}), "INVALID_PARAMS"
    )
    delivery = _refused(
        await alice.send("hi", message_metadata={"a2aWrapper": {"delivery": "later"}}),
        "INVALID_PARAMS",
    )

    listed = await alice.client.post(
        "/a2a/jsonrpc",
        json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}},
        headers={"Authorization": f"Bearer {ALICE}", "A2A-Version": "1.0"},
    )
    assert (await listed.json())["result"]["tasks"] == [], "nothing was stored"
    assert "metadata.a2aWrapper.mode" in mode.message and '"readOnly"' in mode.message
    assert "metadata.a2aWrapper.model" in model.message and "'m-small'" in model.message
    assert "message.metadata.a2aWrapper.delivery" in delivery.message
    assert '"queue"' in delivery.message


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_steered_message_joins_the_running_turn(make: Make, binding: str) -> None:
    alice, _ = await make(binding)
    task = _task(await alice.send("sleep: 2", now=True))
    await _until(alice, task["id"], WORKING)

    steered = _task(
        await alice.send(
            "use ORDERS",
            taskId=task["id"],
            messageId="steer-1",
            metadata={"a2aWrapper": {"delivery": "steer"}},
            now=True,
        )
    )
    done = await _until(alice, task["id"], COMPLETED)

    assert steered["id"] == task["id"]
    assert "Steered: use ORDERS" in _text(done)
    assert [m["messageId"] for m in done["history"]].count("steer-1") == 1


async def test_a_blocking_steer_returns_once_the_turn_settles(make: Make) -> None:
    alice, _ = await make("jsonrpc-1.0")
    task = _task(await alice.send("sleep: 1", now=True))
    await _until(alice, task["id"], WORKING)

    done = _task(
        await alice.send(
            "use ORDERS", taskId=task["id"], metadata={"a2aWrapper": {"delivery": "steer"}}
        )
    )

    assert done["status"]["state"] == COMPLETED
    assert "Steered: use ORDERS" in _text(done)


async def test_a_streamed_steer_streams_the_task_from_then_on(make: Make) -> None:
    alice, _ = await make("jsonrpc-1.0")
    task = _task(await alice.send("sleep: 2", now=True))
    await _until(alice, task["id"], WORKING)
    message = {
        "messageId": "steer-s",
        "role": "ROLE_USER",
        "parts": [{"text": "use ORDERS"}],
        "taskId": task["id"],
    }
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendStreamingMessage",
        "params": {"message": message, "metadata": {"a2aWrapper": {"delivery": "steer"}}},
    }

    response = await alice.client.post(
        "/a2a/jsonrpc",
        json=body,
        headers={"Authorization": f"Bearer {ALICE}", "A2A-Version": "1.0"},
    )
    text = (await response.read()).decode()

    events = [
        json.loads(line[len("data: ") :])["result"]
        for line in text.splitlines()
        if line.startswith("data: ")
    ]
    assert events[0]["task"]["id"] == task["id"], "it starts with the Task"
    updates = [e["statusUpdate"] for e in events if "statusUpdate" in e]
    steered = updates[0]["status"]["message"]
    assert steered["metadata"]["a2aWrapper"]["steered"] == "steer-s"
    assert "Steered" in steered["parts"][0]["text"]
    assert [u["status"]["state"] for u in updates].count(COMPLETED) == 1
    assert updates[-1]["status"]["state"] == COMPLETED


@pytest.mark.parametrize("binding", BINDINGS)
async def test_steering_a_task_with_no_running_turn_is_refused_naming_the_queue(
    make: Make, binding: str
) -> None:
    alice, _ = await make(binding)
    done = _task(await alice.send("hello"))

    refused = _refused(
        await alice.send("more", taskId=done["id"], metadata={"a2aWrapper": {"delivery": "steer"}}),
        "UNSUPPORTED_OPERATION",
    )

    assert 'delivery: "queue"' in refused.message and "completed" in refused.message


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_agent_that_cannot_steer_refuses_naming_the_queue(
    make: Make, binding: str
) -> None:
    alice, _ = await make(binding, scripted=True)
    task = _task(await alice.send("block", now=True))
    await _until(alice, task["id"], WORKING)

    refused = _refused(
        await alice.send("more", taskId=task["id"], metadata={"a2aWrapper": {"delivery": "steer"}}),
        "UNSUPPORTED_OPERATION",
    )
    await alice.cancel(task["id"])

    assert 'delivery: "queue"' in refused.message and "cannot" in refused.message


@pytest.mark.parametrize("binding", BINDINGS)
async def test_messages_behind_a_running_turn_show_their_place_and_leave_it_on_cancel(
    make: Make, binding: str
) -> None:
    alice, _ = await make(binding)
    first = _task(await alice.send("sleep: 1", now=True))
    ctx = first["contextId"]
    await _until(alice, first["id"], WORKING)

    second = _task(await alice.send("second", contextId=ctx, now=True))
    queue = {"a2aWrapper": {"delivery": "queue"}}
    third = _task(await alice.send("third", taskId=first["id"], metadata=queue, now=True))

    assert (second["status"]["state"], third["status"]["state"]) == (SUBMITTED, SUBMITTED)
    assert third["contextId"] == ctx and third["id"] not in (first["id"], second["id"])
    assert _section(second)["queue"] == {"position": 1, "ahead": [first["id"]]}
    assert _section(third)["queue"] == {"position": 2, "ahead": [first["id"], second["id"]]}
    canceled = await alice.cancel(second["id"])
    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert "queue" not in _section(canceled)
    assert _section(await alice.get(third["id"]))["queue"] == {
        "position": 1,
        "ahead": [first["id"]],
    }
    done = await _until(alice, third["id"], COMPLETED)
    assert "queue" not in _section(done)
    assert _text(done) == "third"


@pytest.mark.parametrize("binding", BINDINGS)
async def test_a_fork_starts_from_the_source_and_leaves_it_untouched(
    make: Make, binding: str
) -> None:
    alice, _ = await make(binding)
    source = _task(await alice.send("alpha"))["contextId"]
    _task(await alice.send("beta", contextId=source))

    forked = _task(
        await alice.send(
            "recall:", contextId="fork-1", metadata={"a2aWrapper": {"forkFrom": source}}
        )
    )
    again = _task(await alice.send("recall:", contextId=source))
    later = _task(await alice.send("recall:", contextId="fork-1"))

    assert _text(forked) == "alpha | beta"
    assert _section(forked)["forkedFrom"] == {"contextId": source}
    assert _text(again) == "alpha | beta", "the source never saw the fork"
    assert _text(later) == "alpha | beta | recall:", "the fork goes on in its own session"
    assert _section(later)["sessionId"] == _section(forked)["sessionId"]
    assert _section(forked)["sessionId"] != _section(again)["sessionId"]


async def test_the_fork_turn_carries_the_source_session_and_context(make: Make) -> None:
    alice, _ = await make("jsonrpc-1.0")
    first = _task(await alice.send("alpha"))

    forked = _task(
        await alice.send(
            "recall:", message_metadata={"a2aWrapper": {"forkFrom": first["contextId"]}}
        )
    )

    assert _text(forked) == "alpha"
    assert _section(forked)["forkedFrom"] == {"contextId": first["contextId"]}
    turn = alice.agent.turns[-1]
    assert (turn.fork_of, turn.session_id) == (_section(first)["sessionId"], None)
    assert turn.metadata["a2aWrapper"]["forkFrom"] == first["contextId"]
    assert turn.context_id == forked["contextId"] != first["contextId"]


@pytest.mark.parametrize("binding", BINDINGS)
async def test_another_principals_or_an_unknown_context_cannot_be_forked(
    make: Make, binding: str
) -> None:
    alice, bob = await make(binding)
    source = _task(await alice.send("alpha"))["contextId"]

    theirs = _refused(
        await bob.send("recall:", metadata={"a2aWrapper": {"forkFrom": source}}), "INVALID_PARAMS"
    )
    unknown = _refused(
        await bob.send("recall:", metadata={"a2aWrapper": {"forkFrom": "no-such"}}),
        "INVALID_PARAMS",
    )

    assert theirs.message == unknown.message.replace("no-such", source)
    assert "no conversation" in theirs.message


@pytest.mark.parametrize("binding", BINDINGS)
async def test_an_agent_that_cannot_fork_refuses_clearly(make: Make, binding: str) -> None:
    alice, _ = await make(binding, scripted=True)
    source = _task(await alice.send("alpha"))["contextId"]

    refused = _refused(
        await alice.send("history", metadata={"a2aWrapper": {"forkFrom": source}}),
        "UNSUPPORTED_OPERATION",
    )

    assert "cannot fork" in refused.message


async def test_a_source_with_a_running_turn_cannot_be_forked_yet(make: Make) -> None:
    alice, _ = await make("jsonrpc-1.0")
    running = _task(await alice.send("sleep: 1", now=True))

    refused = _refused(
        await alice.send("recall:", metadata={"a2aWrapper": {"forkFrom": running["contextId"]}}),
        "UNSUPPORTED_OPERATION",
    )

    assert "turn running" in refused.message
    await _until(alice, running["id"], COMPLETED)


async def _stream(caller: Caller, params: dict[str, Any]) -> list[dict[str, Any]] | dict[str, Any]:
    """SendStreamingMessage (JSON-RPC v1.0): its events' results, or the error it answered."""
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage", "params": params}
    headers = {"Authorization": f"Bearer {caller.token}", "A2A-Version": "1.0"}
    response = await caller.client.post("/a2a/jsonrpc", json=body, headers=headers)
    if response.content_type == "application/json":
        error: dict[str, Any] = (await response.json())["error"]
        return error
    text = (await response.read()).decode()
    return [
        json.loads(line[len("data: ") :])["result"]
        for line in text.splitlines()
        if line.startswith("data: ")
    ]


async def test_a_streamed_send_takes_the_same_options_fork_and_errors(make: Make) -> None:
    alice, _ = await make("jsonrpc-1.0")
    source = _task(await alice.send("alpha"))["contextId"]
    message = {"messageId": "s-1", "role": "ROLE_USER", "parts": [{"text": "recall:"}]}
    control = {"forkFrom": source, "model": "m-small", "mode": "readOnly"}

    events = await _stream(alice, {"message": message, "metadata": {"a2aWrapper": control}})
    refused = await _stream(
        alice, {"message": message, "metadata": {"a2aWrapper": {"mode": "everything"}}}
    )

    assert isinstance(events, list)
    done = await alice.get(events[0]["task"]["id"])
    assert done["status"]["state"] == COMPLETED
    assert _text(done) == "alpha"
    assert _section(done)["options"] == {"model": "m-small", "mode": "readOnly"}
    assert _section(done)["forkedFrom"] == {"contextId": source}
    assert isinstance(refused, dict) and refused["code"] == -32602, refused


async def test_operations_say_what_callers_may_use_in_one_place(make: Make) -> None:
    alice, _ = await make("jsonrpc-1.0")
    operations = alice.client.app[OPERATIONS]

    allowed = operations.capabilities()

    assert (allowed.steer, allowed.fork) == (True, True)
    assert allowed.models == ("m-small", "m-large"), "turnOptions.allow narrows any model"
    assert allowed.efforts == ("low", "medium", "high")
    assert allowed.modes == ("default", "plan", "readOnly")


async def test_a_turn_paused_on_a_question_is_not_steered_but_can_be_queued_behind(
    make: Make,
) -> None:
    alice, _ = await make("jsonrpc-1.0", ask=True)
    paused = _task(await alice.send("write: asked.txt\nx", now=True))
    await _until(alice, paused["id"], "TASK_STATE_INPUT_REQUIRED")
    steer = {"a2aWrapper": {"delivery": "steer"}}

    refused = _refused(
        await alice.send("go on", taskId=paused["id"], metadata=steer), "UNSUPPORTED_OPERATION"
    )
    queued = _task(
        await alice.send(
            "after", taskId=paused["id"], metadata={"a2aWrapper": {"delivery": "queue"}}, now=True
        )
    )
    await alice.cancel(paused["id"])

    assert 'delivery: "queue"' in refused.message and "input-required" in refused.message
    assert queued["id"] != paused["id"] and queued["contextId"] == paused["contextId"]
    assert _section(queued)["queue"] == {"position": 1, "ahead": [paused["id"]]}
    assert _text(await _until(alice, queued["id"], COMPLETED)) == "after"


async def test_a_streamed_send_behind_a_running_turn_streams_its_place_then_its_turn(
    make: Make,
) -> None:
    alice, _ = await make("jsonrpc-1.0")
    first = _task(await alice.send("sleep: 1", now=True))
    await _until(alice, first["id"], WORKING)
    message = {
        "messageId": "q-1",
        "role": "ROLE_USER",
        "parts": [{"text": "queued"}],
        "contextId": first["contextId"],
    }

    events = await _stream(alice, {"message": message})

    assert isinstance(events, list)
    assert _section(events[0]["task"])["queue"] == {"position": 1, "ahead": [first["id"]]}
    moves = [
        e["statusUpdate"]["metadata"]["a2aWrapper"]["queue"]
        for e in events
        if "statusUpdate" in e and (e["statusUpdate"].get("metadata") or {}).get("a2aWrapper")
    ]
    assert moves == [None], "it said once that it is next"
    assert events[-1]["statusUpdate"]["status"]["state"] == COMPLETED
