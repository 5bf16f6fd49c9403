"""Conversation control across replicas (issue 37 through issue 32's cluster router): real
daemon processes of the echo agent on one real PostgreSQL. A steer, a queued message and a
fork sent to a replica that does not run the context go to the one that does (a steer like
any send: to the replica running its turn), and the caller is served from there."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import httpx

from tests.support.daemon import Daemon, MakeDaemon
from tests.support.orphans import logged
from tests.test_replicas import CLUSTER, COMPLETED, rpc, rpc_stream, start_replicas, wait_for

WORKING = "TASK_STATE_WORKING"
CANCELED = "TASK_STATE_CANCELED"
STEER = {"a2aWrapper": {"delivery": "steer"}}
QUEUE = {"a2aWrapper": {"delivery": "queue"}}
_ids = itertools.count()


def echo_config(url: str, work: Path) -> dict[str, Any]:
    work.mkdir(exist_ok=True)
    return {
        "backend": "echo",
        "echo": {"workingDirectory": str(work), "chunkDelay": 0},
        "storage": {"kind": "postgres", "url": url},
        "cluster": CLUSTER,
    }


def _message(text: str, **fields: Any) -> dict[str, Any]:
    message = {"messageId": f"m-{next(_ids)}", "role": "ROLE_USER", "parts": [{"text": text}]}
    return message | fields


async def _sent(
    client: httpx.AsyncClient, base: str, message: dict[str, Any], **params: Any
) -> dict[str, Any]:
    reply = await rpc(client, base, "SendMessage", {"message": message, **params})
    assert "result" in reply, reply
    task: dict[str, Any] = reply["result"]["task"]
    return task


def _text(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts") or [] for p in a["parts"])


def _ran_on(replica: Daemon, task_id: str) -> bool:
    return any(e.get("task_id") == task_id for e in logged(replica, "task.state"))


async def _until(client: httpx.AsyncClient, base: str, task_id: str, state: str) -> None:
    async def look() -> bool:
        got = await rpc(client, base, "GetTask", {"id": task_id})
        return bool(got["result"]["status"]["state"] == state)

    await wait_for(look)


async def test_a_steer_sent_to_another_replica_goes_into_the_owner_s_running_turn(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """A turn runs on the owner; a blocking steer sent to the other replica goes into it, and
    so does a streamed one into the next turn: each task completes once, on the owner, having
    taken the steer."""
    owner, other = start_replicas(daemons, echo_config(postgres_url, tmp_path / "w"), 2)
    now = {"configuration": {"returnImmediately": True}}
    async with httpx.AsyncClient() as client:
        blocking = await _sent(client, owner.url, _message("sleep: 2", contextId="c-1"), **now)
        await _until(client, other.url, blocking["id"], WORKING)
        steer = _message("use ORDERS", taskId=blocking["id"], messageId="steer-b")
        done = await _sent(client, other.url, steer, metadata=STEER)

        streamed = await _sent(client, owner.url, _message("sleep: 2", contextId="c-2"), **now)
        await _until(client, other.url, streamed["id"], WORKING)
        steer = _message("use ITEMS", taskId=streamed["id"], messageId="steer-s")
        params = {"message": steer, "metadata": STEER}
        events = [e async for e in rpc_stream(client, other.url, "SendStreamingMessage", params)]

    assert done["status"]["state"] == COMPLETED
    assert "Steered: use ORDERS" in _text(done)
    assert [m["messageId"] for m in done["history"]].count("steer-b") == 1
    assert events[0]["task"]["id"] == streamed["id"], "it starts with the Task"
    updates = [e["statusUpdate"] for e in events if "statusUpdate" in e]
    marks = [(u["status"].get("message") or {}).get("metadata") for u in updates]
    assert {"a2aWrapper": {"steered": "steer-s"}} in marks
    assert [u["status"]["state"] for u in updates].count(COMPLETED) == 1
    assert updates[-1]["status"]["state"] == COMPLETED
    for task in (blocking, streamed):
        assert _ran_on(owner, task["id"]) and not _ran_on(other, task["id"])
    for replica in (owner, other):
        assert replica.stop() == 0


async def test_a_message_queued_through_another_replica_waits_on_the_owner_and_cancels(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    owner, other = start_replicas(daemons, echo_config(postgres_url, tmp_path / "w"), 2)
    now = {"configuration": {"returnImmediately": True}}
    async with httpx.AsyncClient() as client:
        running = await _sent(client, owner.url, _message("sleep: 2", contextId="c-q"), **now)
        await _until(client, other.url, running["id"], WORKING)
        behind = _message("after", taskId=running["id"])
        queued = await _sent(client, other.url, behind, metadata=QUEUE, **now)
        last = await _sent(client, other.url, _message("last", contextId="c-q"), **now)
        canceled = await rpc(client, other.url, "CancelTask", {"id": queued["id"]})
        await _until(client, other.url, last["id"], COMPLETED)
        first = await rpc(client, other.url, "GetTask", {"id": running["id"]})
        ended = await rpc(client, other.url, "GetTask", {"id": last["id"]})

    assert queued["id"] != running["id"] and queued["contextId"] == "c-q"
    assert queued["metadata"]["a2aWrapper"]["queue"] == {"position": 1, "ahead": [running["id"]]}
    assert last["metadata"]["a2aWrapper"]["queue"]["ahead"] == [running["id"], queued["id"]]
    assert canceled["result"]["status"]["state"] == CANCELED
    assert first["result"]["status"]["state"] == COMPLETED
    assert _text(ended["result"]) == "last"
    assert all(_ran_on(owner, t["id"]) for t in (running, queued, last))
    assert not any(_ran_on(other, t["id"]) for t in (running, queued, last))
    for replica in (owner, other):
        assert replica.stop() == 0


async def test_a_fork_sent_to_another_replica_runs_where_its_source_s_session_is(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """The echo agent's sessions live in its process: a fork can only be made by the replica
    that owns the source context, and the fork's context is that replica's from then on."""
    owner, other = start_replicas(daemons, echo_config(postgres_url, tmp_path / "w"), 2)
    fork = {"a2aWrapper": {"forkFrom": "src"}}
    async with httpx.AsyncClient() as client:
        await _sent(client, owner.url, _message("the source's words", contextId="src"))
        forked = await _sent(client, other.url, _message("recall:", contextId="f"), metadata=fork)
        again = await _sent(client, other.url, _message("recall:", contextId="f"))
        ended = await _sent(client, owner.url, _message("done", contextId="src"))
        steer = _message("late", taskId=ended["id"])
        refused = await rpc(client, other.url, "SendMessage", {"message": steer, "metadata": STEER})

    assert forked["status"]["state"] == COMPLETED, forked
    assert forked["metadata"]["a2aWrapper"]["forkedFrom"] == {"contextId": "src"}
    assert _text(forked) == "the source's words"
    assert _text(again) == "the source's words | recall:"
    assert all(_ran_on(owner, t["id"]) for t in (forked, again))
    assert not any(_ran_on(other, t["id"]) for t in (forked, again))
    # A steer of a turn that runs nowhere is refused by the engine, naming the queue.
    assert 'delivery: "queue"' in refused["error"]["message"], refused
    for replica in (owner, other):
        assert replica.stop() == 0
