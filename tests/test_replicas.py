"""Replicas: real daemon processes of one agent on one real PostgreSQL (storage.kind
"postgres"): shared tasks and sessions, the migrate command, start-up errors, and failover
when a replica is SIGKILLed mid-turn."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from core.storage.postgres.schema import LATEST, MIGRATIONS
from harness.postgres import PostgresServer, free_port
from tests.support.daemon import EXE, Daemon, MakeDaemon
from tests.support.orphans import alive, await_file, await_logged, logged
from tests.support.polling import until
from tests.support.webhook import Webhook, serve_webhook

V1 = {"A2A-Version": "1.0"}
LEASE_TTL_MS = 2000
CLUSTER = {"leaseTtl": LEASE_TTL_MS, "heartbeat": 250}
COMPLETED = "TASK_STATE_COMPLETED"


def replica_config(url: str, home: Path) -> dict[str, Any]:
    """The scripted agent with its sessions in `home` (an agent home on shared storage)."""
    home.mkdir(exist_ok=True)
    return {
        "backend": "tests.support.scripted:ScriptedBackend",
        "options": {"home": str(home)},
        "storage": {"kind": "postgres", "url": url},
        "cluster": CLUSTER,
    }


async def rpc(
    client: httpx.AsyncClient, base: str, method: str, params: dict[str, Any]
) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = await client.post(f"{base}/a2a/jsonrpc", json=body, headers=V1, timeout=30)
    result: dict[str, Any] = response.json()
    return result


async def send(
    client: httpx.AsyncClient, base: str, context: str, text: str, **configuration: Any
) -> dict[str, Any]:
    message = {
        "messageId": f"{context}-{text}-{time.monotonic_ns()}",
        "role": "ROLE_USER",
        "contextId": context,
        "parts": [{"text": text}],
    }
    params: dict[str, Any] = {"message": message}
    if configuration:
        params["configuration"] = configuration
    reply = await rpc(client, base, "SendMessage", params)
    assert "result" in reply, reply
    task: dict[str, Any] = reply["result"]["task"]
    return task


def answer(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


def section(task: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return found


def start_replicas(daemons: MakeDaemon, config: dict[str, Any], count: int) -> list[Daemon]:
    replicas = [daemons(config) for _ in range(count)]
    for replica in replicas:
        replica.start()
    return replicas


async def test_turns_round_robin_across_three_replicas_keep_each_context_apart(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """50 contexts x 3 turns, each turn sent to another replica than the last: every turn
    sees exactly its own context's earlier prompts, in one session per context."""
    replicas = start_replicas(daemons, replica_config(postgres_url, tmp_path / "home"), 3)
    urls = [r.url for r in replicas]

    async def conversation(client: httpx.AsyncClient, n: int) -> list[dict[str, Any]]:
        return [
            await send(client, urls[(n + turn) % 3], f"ctx-{n}", f"history: c{n}-{turn}")
            for turn in range(3)
        ]

    limits = httpx.Limits(max_connections=30)
    async with httpx.AsyncClient(limits=limits) as client:
        results = await asyncio.gather(*(conversation(client, n) for n in range(50)))

    for n, tasks in enumerate(results):
        prompts = [f"history: c{n}-{turn}" for turn in range(3)]
        assert [t["status"]["state"] for t in tasks] == [COMPLETED] * 3
        assert [t["contextId"] for t in tasks] == [f"ctx-{n}"] * 3
        assert [answer(t) for t in tasks] == [
            "(no history)",
            prompts[0],
            " | ".join(prompts[:2]),
        ]
        sessions = {section(t)["sessionId"] for t in tasks}
        assert len(sessions) == 1
        assert [section(t)["newSession"] for t in tasks] == [True, False, False]
    # Every turn of a context ran on the replica that owns it, whichever one received it.
    ran_on = [{e["context_id"] for e in logged(r, "task.state")} for r in replicas]
    for n in range(50):
        assert sum(f"ctx-{n}" in contexts for contexts in ran_on) == 1, n
    for replica in replicas:
        assert replica.stop() == 0


async def test_a_task_is_readable_and_listed_on_every_replica(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    first, second = start_replicas(daemons, replica_config(postgres_url, tmp_path / "h"), 2)
    async with httpx.AsyncClient() as client:
        task = await send(client, first.url, "ctx-shared", "echo: hello")
        got = await rpc(client, second.url, "GetTask", {"id": task["id"]})
        listed = await rpc(client, second.url, "ListTasks", {"contextId": "ctx-shared"})

    assert got["result"] == task
    assert [t["id"] for t in listed["result"]["tasks"]] == [task["id"]]
    assert first.stop() == 0
    assert second.stop() == 0


async def test_sigkill_of_a_replica_mid_turn_fails_its_task_and_a_survivor_goes_on(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    owner, survivor = start_replicas(daemons, replica_config(postgres_url, tmp_path / "h"), 2)
    async with httpx.AsyncClient() as client:
        running = await send(client, owner.url, "ctx-lost", "block", returnImmediately=True)

        async def state_on_survivor() -> dict[str, Any]:
            reply = await rpc(client, survivor.url, "GetTask", {"id": running["id"]})
            task: dict[str, Any] = reply["result"]
            return task

        seen = await state_on_survivor()
        deadline = time.monotonic() + 10
        while seen["status"]["state"] != "TASK_STATE_WORKING" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            seen = await state_on_survivor()
        assert seen["status"]["state"] == "TASK_STATE_WORKING"

        owner.stop(signal.SIGKILL)
        killed_at = time.monotonic()
        deadline = killed_at + LEASE_TTL_MS / 1000 + 5
        while seen["status"]["state"] == "TASK_STATE_WORKING" and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            seen = await state_on_survivor()

        assert seen["status"]["state"] == "TASK_STATE_FAILED"
        assert "replica running this task was lost" in answer(seen)
        after = await send(client, survivor.url, "ctx-lost", "echo: again")
        assert after["status"]["state"] == COMPLETED
        assert answer(after) == "again"
    assert survivor.stop() == 0


async def rpc_stream(
    client: httpx.AsyncClient, base: str, method: str, params: dict[str, Any]
) -> AsyncIterator[dict[str, Any]]:
    """The `result` of each SSE event of a JSON-RPC streaming call."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    async with client.stream(
        "POST", f"{base}/a2a/jsonrpc", json=body, headers=V1, timeout=30
    ) as response:
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data:"):
                data = json.loads(line[len("data:") :])
                assert "result" in data, data
                yield data["result"]


async def collect(events: AsyncIterator[dict[str, Any]], into: list[dict[str, Any]]) -> None:
    async for event in events:
        into.append(event)


async def wait_for(look: Callable[[], Awaitable[bool]]) -> None:
    assert await until(look, bool)


async def test_a_subscriber_on_another_replica_gets_every_event_in_order_and_cancel_anywhere(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """A streaming send on one replica, SubscribeToTask on a second, CancelTask on the
    third: the subscriber receives exactly the owner's events, in order, to CANCELED, and
    every replica reports the task CANCELED."""
    owner, watcher, canceller = start_replicas(
        daemons, replica_config(postgres_url, tmp_path / "h"), 3
    )
    message = {"messageId": "m-block", "role": "ROLE_USER", "parts": [{"text": "block"}]}
    async with httpx.AsyncClient() as client:
        sent = rpc_stream(client, owner.url, "SendStreamingMessage", {"message": message})
        first = await anext(sent)
        task_id = first["task"]["id"]
        on_owner = [first]
        owner_done = asyncio.ensure_future(collect(sent, on_owner))

        async def working() -> bool:
            got = await rpc(client, watcher.url, "GetTask", {"id": task_id})
            return bool(got["result"]["status"]["state"] == "TASK_STATE_WORKING")

        await wait_for(working)
        on_watcher: list[dict[str, Any]] = []
        watched = asyncio.ensure_future(
            collect(rpc_stream(client, watcher.url, "SubscribeToTask", {"id": task_id}), on_watcher)
        )
        await wait_for(lambda: _true(len(on_watcher) >= 2))

        canceled = await rpc(client, canceller.url, "CancelTask", {"id": task_id})
        await asyncio.wait_for(asyncio.gather(owner_done, watched), 15)
        states = [
            (await rpc(client, r.url, "GetTask", {"id": task_id}))["result"]["status"]["state"]
            for r in (owner, watcher, canceller)
        ]

    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert on_watcher == on_owner
    assert on_owner[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert states == ["TASK_STATE_CANCELED"] * 3
    for replica in (owner, watcher, canceller):
        assert replica.stop() == 0


async def test_a_watcher_on_another_replica_sees_the_owner_stop(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """SIGTERM to the owner mid-turn: its drain fails the task with the shutdown reason, and
    the subscriber on the other replica receives that last event and its stream ends."""
    config = {**replica_config(postgres_url, tmp_path / "h"), "server": {"shutdownTimeout": 200}}
    owner, watcher = start_replicas(daemons, config, 2)
    async with httpx.AsyncClient() as client:
        running = await send(client, owner.url, "ctx-stop", "block", returnImmediately=True)

        async def working() -> bool:
            got = await rpc(client, watcher.url, "GetTask", {"id": running["id"]})
            return bool(got["result"]["status"]["state"] == "TASK_STATE_WORKING")

        await wait_for(working)
        seen: list[dict[str, Any]] = []
        watched = asyncio.ensure_future(
            collect(rpc_stream(client, watcher.url, "SubscribeToTask", {"id": running["id"]}), seen)
        )
        await wait_for(lambda: _true(len(seen) >= 1))

        assert await asyncio.to_thread(owner.stop) == 0
        await asyncio.wait_for(watched, 15)

    last = seen[-1]["statusUpdate"]["status"]
    assert last["state"] == "TASK_STATE_FAILED"
    assert "server.shutdownTimeout" in last["message"]["parts"][0]["text"]
    assert watcher.stop() == 0


async def _true(value: bool) -> bool:
    return value


async def test_a_cancel_on_a_replica_that_does_not_own_the_task_stops_the_agent_within_1s(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    config = {
        "backend": "tests.support.process_backend:ProcessBackend",
        "options": {"pidDir": str(pids)},
        "storage": {"kind": "postgres", "url": postgres_url},
        "cluster": CLUSTER,
    }
    owner, other = start_replicas(daemons, config, 2)
    async with httpx.AsyncClient() as client:
        task = await send(client, owner.url, "ctx-cancel", "work", returnImmediately=True)
        child = int(await asyncio.to_thread(await_file, pids / f"{task['id']}.pid"))
        assert alive(child)

        async def working() -> bool:
            got = await rpc(client, other.url, "GetTask", {"id": task["id"]})
            return bool(got["result"]["status"]["state"] == "TASK_STATE_WORKING")

        await wait_for(working)
        asked = time.monotonic()
        canceled = await rpc(client, other.url, "CancelTask", {"id": task["id"]})
        for _ in range(100):  # 1 s at most
            if not alive(child) or time.monotonic() > asked + 1:
                break
            await asyncio.sleep(0.01)
        stopped_within = time.monotonic() - asked
        on_owner = await rpc(client, owner.url, "GetTask", {"id": task["id"]})

    assert not alive(child), "the owner's agent process still runs 1 s after the cancel"
    assert stopped_within <= 1
    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert on_owner["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    assert owner.stop() == 0
    assert other.stop() == 0


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    async for hook in serve_webhook():
        yield hook


async def test_pushes_from_three_replicas_arrive_once_each_in_order(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path, webhook: Webhook
) -> None:
    """Streaming sends with an inline push config, spread over three replicas: the webhook
    receives each task's stream events exactly once, in the stream's order."""
    config = {
        **replica_config(postgres_url, tmp_path / "h"),
        "push": {"enabled": True, "allowPrivateTargets": True, "backoff": 10},
    }
    replicas = start_replicas(daemons, config, 3)

    async def streamed(client: httpx.AsyncClient, n: int) -> list[dict[str, Any]]:
        message = {
            "messageId": f"m-{n}",
            "role": "ROLE_USER",
            "parts": [{"text": f"deltas: {n}|a|b"}],
        }
        push = {"url": webhook.url, "token": f"t-{n}"}
        params = {"message": message, "configuration": {"taskPushNotificationConfig": push}}
        base = replicas[n % 3].url
        return [e async for e in rpc_stream(client, base, "SendStreamingMessage", params)]

    async with httpx.AsyncClient() as client:
        streams = await asyncio.gather(*(streamed(client, n) for n in range(9)))
    total = sum(len(events) for events in streams)
    delivered = await webhook.wait_delivered(total)

    assert len(webhook.delivered) == total
    for events in streams:
        task_id = events[0]["task"]["id"]
        assert [body for body in delivered if _task_of(body) == task_id] == events
    for replica in replicas:
        assert replica.stop() == 0


async def test_a_survivor_delivers_the_pushes_a_killed_replica_left(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path, webhook: Webhook
) -> None:
    config = {
        **replica_config(postgres_url, tmp_path / "h"),
        "push": {"enabled": True, "allowPrivateTargets": True, "backoff": 600_000},
    }
    owner, survivor = start_replicas(daemons, config, 2)
    webhook.fail_next = 1_000  # the owner's first attempt fails; the rest wait behind it
    message = {"messageId": "m-left", "role": "ROLE_USER", "parts": [{"text": "echo: left"}]}
    push = {"url": webhook.url, "token": "t"}
    params = {"message": message, "configuration": {"taskPushNotificationConfig": push}}
    async with httpx.AsyncClient() as client:
        events = [e async for e in rpc_stream(client, owner.url, "SendStreamingMessage", params)]
    await webhook.wait_received(1)
    # Every event is in the outbox (what a crash cannot lose) before the owner dies.
    await asyncio.to_thread(await_logged, owner, "push.queued", count=len(events))

    owner.stop(signal.SIGKILL)
    webhook.fail_next = 0

    assert await webhook.wait_delivered(len(events)) == events
    assert survivor.stop() == 0


def _task_of(event: dict[str, Any]) -> str:
    for key in ("task", "statusUpdate", "artifactUpdate"):
        if key in event:
            found: str = event[key]["id" if key == "task" else "taskId"]
            return found
    return ""


def migrate(tmp_path: Path, storage: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`a2a-wrapper migrate` on a config with this storage block."""
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps({"backend": "tests.support.scripted:ScriptedBackend", "storage": storage})
    )
    return subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "migrate", str(config)], capture_output=True, text=True, timeout=60, check=False
    )


def test_migrate_applies_the_schema_once(postgres_url: str, tmp_path: Path) -> None:
    storage = {"kind": "postgres", "url": postgres_url}

    first, second = migrate(tmp_path, storage), migrate(tmp_path, storage)

    assert first.returncode == 0, first.stderr
    every = ", ".join(str(m.version) for m in MIGRATIONS)
    assert first.stdout.strip().endswith(f"schema at version {LATEST} (applied {every})")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip().endswith(f"schema at version {LATEST} (nothing to apply)")


def test_migrate_says_what_it_cannot_reach_and_what_needs_none(tmp_path: Path) -> None:
    url = f"postgresql://postgres:secret@127.0.0.1:{free_port()}/nowhere"

    unreachable = migrate(tmp_path, {"kind": "postgres", "url": url})
    sqlite = migrate(tmp_path, {"kind": "sqlite", "path": str(tmp_path / "t.db")})

    assert unreachable.returncode == 3
    assert unreachable.stderr.startswith("a2a-wrapper: cannot migrate postgresql://postgres:***@")
    assert "secret" not in unreachable.stderr
    assert sqlite.returncode == 0
    assert "nothing to do" in sqlite.stdout


def test_an_unreachable_database_is_one_line_and_the_storage_exit_code(
    daemons: MakeDaemon,
) -> None:
    url = f"postgresql://postgres:secret@127.0.0.1:{free_port()}/nowhere"
    daemon = daemons(
        {
            "backend": "tests.support.scripted:ScriptedBackend",
            "storage": {"kind": "postgres", "url": url},
        }
    )

    code, out, err = daemon.run_to_exit()

    assert code == 3, err
    assert out == ""
    # The log lines are JSON; the operator's message is the one plain line.
    lines = [line for line in err.strip().splitlines() if not line.startswith("{")]
    assert len(lines) == 1, err
    assert lines[0].startswith("a2a-wrapper: cannot open the storage at postgresql://postgres:***@")
    assert "secret" not in err


def _journal(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def test_a_frozen_owner_neither_overwrites_its_failed_tasks_nor_runs_their_contexts(
    postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """Split brain (issue 31, item 4): three replicas; the owner is frozen (SIGSTOP) mid-turn
    for longer than leaseTtl. A survivor fails its tasks ("replica lost") and runs the next
    turn of the context; after SIGCONT the old owner writes nothing over the FAILED tasks (one
    of its turns finished while it was frozen, another is still sleeping), stops its turn of
    the context the survivor now runs (the agent interrupted) before that turn ends, runs no
    other, and logs the lease loss once."""
    journal = tmp_path / "journal.jsonl"
    config = replica_config(postgres_url, tmp_path / "h")
    config["options"]["journal"] = str(journal)
    owner, survivor, third = start_replicas(daemons, config, 3)
    async with httpx.AsyncClient() as client:

        async def stored(task_id: str, on: Daemon = survivor) -> dict[str, Any]:
            got: dict[str, Any] = (await rpc(client, on.url, "GetTask", {"id": task_id}))["result"]
            return got

        async def in_state(task_id: str, state: str) -> bool:
            return bool((await stored(task_id))["status"]["state"] == state)

        short = await send(client, owner.url, "ctx-short", "sleep: 2.5", returnImmediately=True)
        long = await send(client, owner.url, "ctx-long", "sleep: 60", returnImmediately=True)
        for task in (short, long):
            await wait_for(partial(in_state, task["id"], "TASK_STATE_WORKING"))
        started = time.monotonic()
        owner.proc.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:
            for task in (short, long):
                await wait_for(partial(in_state, task["id"], "TASK_STATE_FAILED"))
            failed = {t["id"]: await stored(t["id"]) for t in (short, long)}
            # The context's next turn runs on a survivor meanwhile (it takes the context).
            nxt = await send(client, survivor.url, "ctx-long", "sleep: 4", returnImmediately=True)
            await wait_for(lambda: in_state(nxt["id"], "TASK_STATE_WORKING"))
            # Frozen past the end of the short turn's sleep: it completes at SIGCONT.
            await asyncio.sleep(max(0.0, started + 3 - time.monotonic()))
        finally:
            owner.proc.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        resumed = time.time()
        await wait_for(lambda: in_state(nxt["id"], COMPLETED))
        after = await send(client, survivor.url, "ctx-short", "echo: after")
        final = {
            t["id"]: [await stored(t["id"], on) for on in (owner, survivor, third)]
            for t in (short, long)
        }

    for task_id, seen in final.items():
        assert seen == [failed[task_id]] * 3, task_id
        assert "replica running this task was lost" in answer(seen[0])
    assert after["status"]["state"] == COMPLETED
    lines = _journal(journal)
    starts = [e for e in lines if e["event"] == "start"]
    # ctx-long is the survivor's now: the old owner ran no turn of it but the stopped one.
    assert [e["task"] for e in starts if e["context"] == "ctx-long" and e["pid"] == owner.pid] == [
        long["id"]
    ]
    # ctx-short nobody took meanwhile: back on the old owner, once its first turn was over.
    short_turns = [e for e in starts if e["context"] == "ctx-short"]
    assert [e["task"] for e in short_turns] == [short["id"], after["id"]]
    ends = {(e["pid"], e["task"]): e for e in lines if e["event"] == "end"}
    old_end = ends[(owner.pid, long["id"])]
    new_end = ends[(survivor.pid, nxt["id"])]
    assert old_end["how"] == "stopped"
    assert any(
        e["event"] == "interrupt" and e["task"] == long["id"] and e["pid"] == owner.pid
        for e in lines
    )
    # The old owner's turn of ctx-long stopped before the survivor's turn of it ended: its
    # last tick comes after SIGCONT only by the moment its heartbeat took to see the loss.
    assert old_end["t"] < new_end["t"]
    assert resumed < new_end["t"]
    await asyncio.to_thread(await_logged, owner, "cluster.lease_lost")
    assert len(logged(owner, "cluster.lease_lost")) == 1
    for replica in (owner, survivor, third):
        assert replica.stop() == 0


async def test_cancels_and_forwarded_turns_sent_while_the_owner_relistens_are_not_lost(
    postgres_server: PostgresServer, postgres_url: str, daemons: MakeDaemon, tmp_path: Path
) -> None:
    """Issue 31, item 6: the owner's LISTEN connection is cut (pg_terminate_backend) and, to
    hold the gap open, the database refuses new connections for a moment; a CancelTask and a
    forwarded turn sent to the other replica meanwhile still reach the owner once it listens
    again: the task is CANCELED (not left to finish), the turn runs there."""
    owner, other = start_replicas(daemons, replica_config(postgres_url, tmp_path / "h"), 2)
    database = postgres_url.rsplit("/", 1)[1]
    admin = await asyncpg.connect(postgres_server.dsn())
    async with httpx.AsyncClient() as client:
        running = await send(client, owner.url, "ctx-gap", "block", returnImmediately=True)
        first = await send(client, owner.url, "ctx-fwd", "echo: first")

        async def working() -> bool:
            got = await rpc(client, other.url, "GetTask", {"id": running["id"]})
            return bool(got["result"]["status"]["state"] == "TASK_STATE_WORKING")

        await wait_for(working)
        # Warm both replicas' pools: only the listener must need a new connection.
        await asyncio.gather(
            *(rpc(client, r.url, "GetTask", {"id": first["id"]}) for r in (owner, other) * 4)
        )
        try:
            await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
            cut = await admin.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                "WHERE datname = $1 AND query LIKE 'LISTEN%'",
                database,
            )
            assert cut == 2  # both replicas' listeners
            await asyncio.to_thread(await_logged, owner, "cluster.listen_lost")
            canceling = asyncio.ensure_future(
                rpc(client, other.url, "CancelTask", {"id": running["id"]})
            )
            forwarding = asyncio.ensure_future(
                rpc(client, other.url, "SendMessage", _message("ctx-fwd", "history"))
            )
            await asyncio.to_thread(await_logged, owner, "cluster.listen_failed")
        finally:
            await admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
            await admin.close()
        canceled, forwarded = await asyncio.gather(canceling, forwarding)
        on_owner = await rpc(client, owner.url, "GetTask", {"id": running["id"]})

    assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED", canceled
    assert on_owner["result"]["status"]["state"] == "TASK_STATE_CANCELED"
    task = forwarded["result"]["task"]
    assert task["status"]["state"] == COMPLETED
    assert answer(task) == "echo: first"
    assert logged(owner, "cluster.listening_again")
    for replica in (owner, other):
        assert replica.stop() == 0


def _message(context: str, text: str) -> dict[str, Any]:
    return {
        "message": {
            "messageId": f"{context}-{time.monotonic_ns()}",
            "role": "ROLE_USER",
            "contextId": context,
            "parts": [{"text": text}],
        }
    }
