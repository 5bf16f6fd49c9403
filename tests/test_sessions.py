"""Each contextId is one durable backend conversation (DESIGN.md §4, docs/configuration.md).

Driven through the real HTTP app with the scripted backend, whose sessions remember their
prompts (`history: x` answers with them), so every test can see which session a turn reached.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from aiohttp.test_utils import TestClient

from core.bindings.http.keys import SERVICE
from core.daemon import create_app
from core.engine.service import TaskService
from core.sessions.manager import SessionManager
from core.settings import Settings
from core.storage.contracts import SessionRecord
from core.storage.memory import InMemorySessionStore, InMemoryTaskStore
from core.wire.models import Message, Part, SendMessageRequest, Task
from tests.conftest import Client, MakeClient, make_settings
from tests.support.scripted import ScriptedBackend
from tests.support.wire import call, user_message

AiohttpClient = Callable[..., Awaitable[TestClient[Any, Any]]]


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


async def send(client: Client, text: str, context_id: str, **configuration: Any) -> dict[str, Any]:
    """A blocking SendMessage on `context_id`; returns the task."""
    params: dict[str, Any] = {"message": user_message(text, contextId=context_id, messageId=text)}
    if configuration:
        params["configuration"] = configuration
    body = await call(client, "SendMessage", params)
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def answer(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


def wrapper(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return section


def sqlite_settings(tmp_path: Path, **session: Any) -> Settings:
    return make_settings(
        storage={"kind": "sqlite", "path": str(tmp_path / "state.sqlite3")},
        session=session,
    )


async def expiring_client(make_client: MakeClient, **settings: Any) -> tuple[Client, FakeClock]:
    """A client whose sessions expire 1 s after creation on a fake clock, swept only on demand."""
    clock = FakeClock()
    client = await make_client(
        make_settings(session={"ttl": 1000, "cleanupInterval": 0}, **settings), clock=clock
    )
    return client, clock


async def test_turns_of_one_context_reach_one_session_across_a_restart(
    aiohttp_client: AiohttpClient, backend: ScriptedBackend, durable_storage: dict[str, Any]
) -> None:
    backend.resume_prefix = "scripted --resume"
    settings = make_settings(storage=durable_storage)
    first_app = await aiohttp_client(create_app(settings, backend=backend))

    one = await send(first_app, "history: one", "ctx")
    two = await send(first_app, "history: two", "ctx")
    await first_app.close()
    # A new app on the same storage plays the restarted daemon; the backend object plays the
    # agent's own durable storage.
    second_app = await aiohttp_client(create_app(settings, backend=backend))
    three = await send(second_app, "history: three", "ctx")

    assert answer(one) == "(no history)"
    assert answer(two) == "history: one"
    assert answer(three) == "history: one | history: two"
    session = wrapper(one)["sessionId"]
    assert [wrapper(t)["sessionId"] for t in (one, two, three)] == [session] * 3
    assert [wrapper(t)["newSession"] for t in (one, two, three)] == [True, False, False]
    assert wrapper(three) == {
        "backend": "scripted",
        "sessionId": session,
        "newSession": False,
        "expiredSession": False,
        "contextReset": False,
        "resumeCommand": f"scripted --resume {session}",
    }
    assert [t.session_id for t in backend.turns] == [None, session, session]


async def test_session_is_stored_the_moment_the_backend_names_it(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client()

    crashed = await send(client, "crash", "ctx")
    after = await send(client, "history: after", "ctx")

    assert crashed["status"]["state"] == "TASK_STATE_FAILED"
    assert answer(after) == "crash"
    assert wrapper(after)["sessionId"] == wrapper(crashed)["sessionId"]


async def test_expired_session_is_replaced_and_dropped_at_the_next_turn(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    clock = FakeClock()
    settings = make_settings(session={"ttl": 60_000, "cleanupInterval": 0})
    client = await make_client(settings, clock=clock)

    first = await send(client, "history: first", "ctx")
    clock.advance(seconds=59)
    # ttl counts from creation: using the session does not extend it.
    second = await send(client, "history: second", "ctx")
    clock.advance(seconds=1)
    third = await send(client, "history: third", "ctx")

    old = wrapper(first)["sessionId"]
    assert wrapper(second)["sessionId"] == old
    assert wrapper(second)["expiredSession"] is False
    assert answer(third) == "(no history)"
    assert wrapper(third)["sessionId"] != old
    assert wrapper(third)["newSession"] is True
    assert wrapper(third)["expiredSession"] is True
    assert backend.dropped == [old]
    assert client.app[SERVICE].sweeping_sessions is False


async def test_sweep_removes_expired_mappings_and_drops_their_sessions(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    clock = FakeClock()
    settings = make_settings(session={"ttl": 1000, "cleanupInterval": 20})
    client = await make_client(settings, clock=clock)
    service = client.app[SERVICE]
    first = await send(client, "echo: a", "ctx-a")
    await send(client, "echo: b", "ctx-b")
    assert await service.sessions.store.count() == 2

    clock.advance(seconds=2)
    with anyio.fail_after(5):
        await backend.dropped_event.wait()
        while await service.sessions.store.count():
            await backend.dropped_event.wait()
            backend.dropped_event = anyio.Event()

    assert service.sweeping_sessions is True
    assert wrapper(first)["sessionId"] in backend.dropped
    assert len(backend.dropped) == 2


async def test_a_session_the_sweep_expired_is_reported_by_the_next_turn_only(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client, clock = await expiring_client(make_client)
    sessions = client.app[SERVICE].sessions
    first = await send(client, "history: first", "ctx")
    clock.advance(seconds=2)

    assert await sessions.sweep() == 1
    after = await send(client, "history: after", "ctx")
    again = await send(client, "history: again", "ctx")
    fresh = await send(client, "history: fresh", "other-ctx")

    assert backend.dropped == [wrapper(first)["sessionId"]]
    assert answer(after) == "(no history)"
    assert (wrapper(after)["newSession"], wrapper(after)["expiredSession"]) == (True, True)
    assert (wrapper(again)["newSession"], wrapper(again)["expiredSession"]) == (False, False)
    assert (wrapper(fresh)["newSession"], wrapper(fresh)["expiredSession"]) == (True, False)


async def test_a_sweep_tombstone_is_forgotten_after_the_retention(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client, clock = await expiring_client(make_client, storage={"retention": 60_000})
    sessions = client.app[SERVICE].sessions
    await send(client, "echo: kept", "kept")
    await send(client, "echo: forgotten", "forgotten")
    clock.advance(seconds=2)
    assert await sessions.sweep() == 2

    kept = await send(client, "history: kept", "kept")
    clock.advance(seconds=61)
    await sessions.sweep()
    forgotten = await send(client, "history: forgotten", "forgotten")

    assert wrapper(kept)["expiredSession"] is True
    # A minute after the expiry the context is as good as unknown: no report any more.
    assert (wrapper(forgotten)["newSession"], wrapper(forgotten)["expiredSession"]) == (True, False)


async def test_a_tombstone_does_not_touch_a_turn_without_context_reuse() -> None:
    store = InMemorySessionStore()
    dropped: list[str] = []

    async def drop(session_id: str) -> None:
        dropped.append(session_id)

    created = datetime(2026, 1, 1, tzinfo=UTC)
    await store.put(SessionRecord("p", "ctx", "scripted", "s1", created, created))
    await store.expire_many(
        [SessionRecord("p", "ctx", "scripted", "s1", created, created)], created
    )
    stateless = SessionManager(store, "scripted", drop, reuse_by_context=False)

    lease = await stateless.begin("p", "ctx")
    await stateless.end(lease)

    assert (lease.new_session, lease.expired_session) == (True, False)
    assert await store.take_tombstone("p", "ctx") is True
    assert dropped == []


async def test_a_turn_in_flight_is_never_expired(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client, clock = await expiring_client(make_client)
    service = client.app[SERVICE]
    running = await send(client, "block", "ctx", returnImmediately=True)
    await backend.entered(running["id"]).wait()

    clock.advance(seconds=5)
    removed = await service.sessions.sweep()
    backend.release(running["id"])
    after = await send(client, "history: after", "ctx")

    done = (await call(client, "GetTask", {"id": running["id"]}))["result"]

    assert removed == 0
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    # It came due during the turn, so it expires right after it: the next turn starts fresh.
    assert wrapper(after)["expiredSession"] is True
    assert answer(after) == "(no history)"
    assert backend.dropped == [wrapper(done)["sessionId"]]


async def test_ttl_zero_never_expires(make_client: MakeClient, backend: ScriptedBackend) -> None:
    clock = FakeClock()
    client = await make_client(
        make_settings(session={"ttl": 0, "cleanupInterval": 10}), clock=clock
    )

    first = await send(client, "history: first", "ctx")
    clock.advance(days=3650)
    later = await send(client, "history: later", "ctx")

    assert wrapper(later)["sessionId"] == wrapper(first)["sessionId"]
    assert answer(later) == "history: first"
    assert await client.app[SERVICE].sessions.sweep() == 0
    assert client.app[SERVICE].sweeping_sessions is False
    assert backend.dropped == []


async def test_cleanup_interval_zero_never_sweeps(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client, clock = await expiring_client(make_client)
    await send(client, "echo: a", "ctx")
    clock.advance(seconds=10)

    assert client.app[SERVICE].sweeping_sessions is False
    assert await client.app[SERVICE].sessions.store.count() == 1
    assert backend.dropped == []


async def test_without_reuse_every_message_gets_a_fresh_session(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(session={"reuseByContext": False}))

    first = await send(client, "history: first", "ctx")
    second = await send(client, "history: second", "ctx")

    assert answer(second) == "(no history)"
    assert wrapper(second)["sessionId"] != wrapper(first)["sessionId"]
    assert wrapper(second)["newSession"] is True
    assert await client.app[SERVICE].sessions.store.count() == 0


async def test_without_reuse_an_input_required_task_continues_its_own_session(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(session={"reuseByContext": False}))
    asked = await send(client, "ask: which file?", "ctx")
    body = await call(
        client,
        "SendMessage",
        {"message": user_message("history: answer", taskId=asked["id"], messageId="m-2")},
    )
    continued = body["result"]["task"]

    assert answer(continued) == "ask: which file?"
    assert wrapper(continued)["sessionId"] == wrapper(asked)["sessionId"]


async def test_fifty_contexts_three_turns_each_never_cross(
    make_client: MakeClient, backend: ScriptedBackend, tmp_path: Path
) -> None:
    client = await make_client(sqlite_settings(tmp_path))
    contexts = [f"ctx-{i}" for i in range(50)]
    task_ids: dict[str, list[str]] = {c: [] for c in contexts}

    async def submit(context: str) -> None:
        for turn in range(3):
            task = await send(client, f"history: {context}/{turn}", context, returnImmediately=True)
            task_ids[context].append(task["id"])

    async with anyio.create_task_group() as tg:
        for context in contexts:
            tg.start_soon(submit, context)
    finals: dict[str, dict[str, Any]] = {}

    async def last(context: str) -> None:
        # Queued behind the three, so it returns once they are done.
        finals[context] = await send(client, f"history: {context}/end", context)

    async with anyio.create_task_group() as tg:
        for context in contexts:
            tg.start_soon(last, context)

    sessions = {wrapper(finals[c])["sessionId"] for c in contexts}
    assert len(sessions) == 50
    for context in contexts:
        expected = [f"history: {context}/{turn}" for turn in range(3)]
        assert answer(finals[context]) == " | ".join(expected)
        for turn, task_id in enumerate(task_ids[context]):
            task = (await call(client, "GetTask", {"id": task_id}))["result"]
            # Each turn saw exactly the turns before it: one after another, in order.
            assert answer(task) == (" | ".join(expected[:turn]) or "(no history)")
            assert wrapper(task)["sessionId"] == wrapper(finals[context])["sessionId"]


async def test_queue_bound_comes_from_session_max_queued_turns(
    make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(make_settings(session={"maxQueuedTurns": 1}))
    running = await send(client, "block", "ctx", returnImmediately=True)
    await backend.entered(running["id"]).wait()
    await send(client, "echo: queued", "ctx", returnImmediately=True)

    refused = await call(
        client,
        "SendMessage",
        {"message": user_message("echo: too many", contextId="ctx", messageId="m-x")},
    )
    backend.release(running["id"])

    assert refused["error"]["code"] == -32004
    assert "queued" in refused["error"]["message"]


async def test_principals_never_share_a_session(backend: ScriptedBackend) -> None:
    sessions = SessionManager(InMemorySessionStore(), backend.name, backend.drop_session)
    service = TaskService(InMemoryTaskStore(), backend, sessions=sessions)

    def message(text: str) -> SendMessageRequest:
        return SendMessageRequest(
            message=Message(
                message_id=text, role="ROLE_USER", parts=[Part(text=text)], context_id="shared"
            )
        )

    async with service.running():
        alice = await service.send("alice", message("history: alice"))
        bob = await service.send("bob", message("history: bob"))
        alice_again = await service.send("alice", message("history: alice again"))

    assert isinstance(alice, Task)
    assert isinstance(bob, Task)
    assert isinstance(alice_again, Task)
    alice_session = await sessions.store.get("alice", "shared")
    bob_session = await sessions.store.get("bob", "shared")
    assert alice_session is not None
    assert bob_session is not None
    assert alice_session.session_id != bob_session.session_id
    assert bob.status.message is not None
    assert bob.status.message.parts[0].text == "(no history)"
    assert alice_again.status.message is not None
    assert alice_again.status.message.parts[0].text == "history: alice"
    assert await sessions.store.get("carol", "shared") is None
