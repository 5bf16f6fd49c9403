"""The TaskStore contract: memory, SQLite and PostgreSQL (tests/storage/conftest.py) behave
alike; what SQLite and PostgreSQL keep survives a reopen; PostgreSQL's replica cases last."""

from __future__ import annotations

import base64
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import ValidationError

from core.storage.contracts import StaleWriteError, TaskQuery, TaskStore
from core.storage.kinds import Storage
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.tasks import PostgresTaskStore
from core.wire.enums import TaskState
from core.wire.errors import InvalidParamsError
from core.wire.models import Artifact, Message, Part, Task, TaskStatus
from tests.storage.conftest import Engine

ALICE = "alice"
BOB = "bob"
T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=UTC)


def at(minutes: int) -> datetime:
    return T0 + timedelta(minutes=minutes)


def make_task(
    task_id: str,
    *,
    context_id: str = "ctx-1",
    state: TaskState = TaskState.COMPLETED,
    when: datetime = T0,
) -> Task:
    return Task(id=task_id, context_id=context_id, status=TaskStatus(state=state, timestamp=when))


def rich_task() -> Task:
    """A task that uses every kind of part, history, artifacts and nested metadata."""
    question = Message(
        message_id="m-1",
        context_id="ctx-rich",
        task_id="t-rich",
        role="ROLE_USER",
        parts=[
            Part(text="please summarise"),
            Part(raw=base64.b64encode(b"\x00\x01binary").decode(), media_type="image/png"),
            Part(url="https://example.com/spec.pdf", filename="spec.pdf"),
            Part(data={"numbers": [1, 2, 3], "nested": {"ok": True}}),
        ],
        metadata={"source": "unit-test"},
    )
    answer = Message(
        message_id="m-2", role="ROLE_AGENT", parts=[Part(text="summary")], extensions=["ext:a"]
    )
    return Task(
        id="t-rich",
        context_id="ctx-rich",
        status=TaskStatus(state=TaskState.INPUT_REQUIRED, message=answer, timestamp=at(7)),
        artifacts=[
            Artifact(
                artifact_id="a-1",
                name="summary.md",
                parts=[Part(text="# Summary"), Part(data=[1, "two", None])],
                metadata={"lines": 1},
            )
        ],
        history=[question, answer],
        metadata={"labels": ["x", "y"], "score": 0.5},
    )


@pytest.fixture
def store(storage: Storage) -> TaskStore:
    return storage.tasks


def ids(tasks: list[Task]) -> list[str]:
    return [t.id for t in tasks]


async def test_save_then_get_returns_an_equal_task(store: TaskStore) -> None:
    task = rich_task()
    await store.save(ALICE, task)

    loaded = await store.get(ALICE, "t-rich")

    assert loaded is not None
    assert loaded.dump() == task.dump()


async def test_get_returns_none_for_an_unknown_id(store: TaskStore) -> None:
    assert await store.get(ALICE, "missing") is None


async def test_saved_task_is_a_snapshot_not_a_live_reference(store: TaskStore) -> None:
    task = make_task("t-1", state=TaskState.WORKING)
    await store.save(ALICE, task)
    # Wire models are frozen: nobody can change a saved snapshot in place.
    with pytest.raises(ValidationError, match="frozen"):
        task.status.state = TaskState.COMPLETED  # type: ignore[misc] # the point: it is read-only
    changed = task.model_copy(update={"status": TaskStatus(state=TaskState.COMPLETED)})

    loaded = await store.get(ALICE, "t-1")

    assert changed.status.state is TaskState.COMPLETED
    assert loaded is not None
    assert loaded.status.state is TaskState.WORKING


async def test_save_replaces_the_previous_snapshot(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1", state=TaskState.WORKING, when=at(0)))
    await store.save(ALICE, make_task("t-1", state=TaskState.COMPLETED, when=at(1)))

    loaded = await store.get(ALICE, "t-1")
    page = await store.list(ALICE, TaskQuery())

    assert loaded is not None
    assert loaded.status.state is TaskState.COMPLETED
    assert ids(page.tasks) == ["t-1"]
    assert page.total_size == 1


async def test_a_terminal_task_never_changes(store: TaskStore) -> None:
    """Issue 31, item 4: a late writer (a replica that lost its lease, a turn that ended
    elsewhere) cannot overwrite a terminal task; the same snapshot again is harmless."""
    failed = make_task("t-1", state=TaskState.FAILED, when=at(1))
    await store.save(ALICE, make_task("t-1", state=TaskState.WORKING, when=at(0)))
    await store.save(ALICE, failed)
    await store.save(ALICE, failed)

    for late in (TaskState.COMPLETED, TaskState.WORKING, TaskState.FAILED):
        with pytest.raises(StaleWriteError):
            await store.save(ALICE, make_task("t-1", state=late, when=at(2)))

    assert await store.get(ALICE, "t-1") == failed


async def test_postgres_a_replica_whose_lease_expired_writes_nothing(postgres_url: str) -> None:
    """The fence: a task write is refused once the writer's lease has expired (checked by
    the database in the same statement); the heartbeat's renewal fails too (a survivor may
    have taken its contexts), and after `rejoin` it writes again."""
    db = PostgresDatabase(postgres_url)
    store = PostgresTaskStore(db)
    doubts: list[bool] = []
    db.on_doubt = lambda: doubts.append(True)
    await store.open()
    try:
        await store.save(ALICE, make_task("t-1", state=TaskState.WORKING))
        await db.execute(
            "UPDATE replicas SET expires_at = now() - interval '1 second' WHERE id = $1",
            db.replica_id,
        )

        with pytest.raises(StaleWriteError):
            await store.save(ALICE, make_task("t-1", state=TaskState.COMPLETED, when=at(1)))
        with pytest.raises(StaleWriteError):
            await store.save(ALICE, make_task("t-2", state=TaskState.WORKING))
        assert not await db.renew()
        assert doubts == [True, True]
        stored = await store.get(ALICE, "t-1")
        assert stored is not None
        assert stored.status.state is TaskState.WORKING
        assert await store.get(ALICE, "t-2") is None

        await db.rejoin()
        await store.save(ALICE, make_task("t-2", state=TaskState.WORKING))
        assert await store.get(ALICE, "t-2") is not None
    finally:
        await store.close()


async def test_another_principal_cannot_see_the_task(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1"))

    assert await store.get(BOB, "t-1") is None
    page = await store.list(BOB, TaskQuery())
    assert page.tasks == []
    assert page.total_size == 0
    assert page.next_page_token == ""


async def test_same_task_id_is_independent_per_principal(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1", state=TaskState.WORKING))
    await store.save(BOB, make_task("t-1", state=TaskState.COMPLETED))
    await store.delete(BOB, "t-1")

    alices = await store.get(ALICE, "t-1")

    assert alices is not None
    assert alices.status.state is TaskState.WORKING
    assert await store.get(BOB, "t-1") is None


async def test_delete_removes_the_task(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1"))
    await store.save(ALICE, make_task("t-2"))

    await store.delete(ALICE, "t-1")

    assert await store.get(ALICE, "t-1") is None
    assert ids((await store.list(ALICE, TaskQuery())).tasks) == ["t-2"]


async def test_delete_of_a_missing_task_is_a_no_op(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1"))

    await store.delete(ALICE, "missing")
    await store.delete(BOB, "t-1")

    assert await store.get(ALICE, "t-1") is not None


async def test_list_is_newest_first_with_ties_by_id_descending(store: TaskStore) -> None:
    # Saved in an order that matches neither the timestamp nor the id order.
    await store.save(ALICE, make_task("b-tie", when=at(5)))
    await store.save(ALICE, make_task("oldest", when=at(0)))
    await store.save(ALICE, make_task("newest", when=at(10)))
    await store.save(ALICE, make_task("c-tie", when=at(5)))
    await store.save(ALICE, make_task("a-tie", when=at(5)))

    page = await store.list(ALICE, TaskQuery())

    assert ids(page.tasks) == ["newest", "c-tie", "b-tie", "a-tie", "oldest"]
    assert page.total_size == 5
    assert page.next_page_token == ""


async def test_list_filters_by_context(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1", context_id="ctx-a", when=at(1)))
    await store.save(ALICE, make_task("t-2", context_id="ctx-b", when=at(2)))
    await store.save(ALICE, make_task("t-3", context_id="ctx-a", when=at(3)))

    page = await store.list(ALICE, TaskQuery(context_id="ctx-a"))

    assert ids(page.tasks) == ["t-3", "t-1"]
    assert page.total_size == 2


async def test_list_filters_by_state(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1", state=TaskState.WORKING, when=at(1)))
    await store.save(ALICE, make_task("t-2", state=TaskState.COMPLETED, when=at(2)))
    await store.save(ALICE, make_task("t-3", state=TaskState.WORKING, when=at(3)))

    working = await store.list(ALICE, TaskQuery(state=TaskState.WORKING))
    canceled = await store.list(ALICE, TaskQuery(state=TaskState.CANCELED))

    assert ids(working.tasks) == ["t-3", "t-1"]
    assert working.total_size == 2
    assert canceled.tasks == []
    assert canceled.total_size == 0


async def test_list_filters_by_status_timestamp(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1", when=at(1)))
    await store.save(ALICE, make_task("t-2", when=at(2)))
    await store.save(ALICE, make_task("t-3", when=at(3)))

    page = await store.list(ALICE, TaskQuery(status_after=at(1) + timedelta(seconds=30)))

    assert ids(page.tasks) == ["t-3", "t-2"]
    assert page.total_size == 2


async def test_list_combines_filters(store: TaskStore) -> None:
    await store.save(ALICE, make_task("t-1", context_id="ctx-a", state=TaskState.WORKING))
    await store.save(ALICE, make_task("t-2", context_id="ctx-a", state=TaskState.COMPLETED))
    await store.save(ALICE, make_task("t-3", context_id="ctx-b", state=TaskState.WORKING))

    page = await store.list(ALICE, TaskQuery(context_id="ctx-a", state=TaskState.WORKING))

    assert ids(page.tasks) == ["t-1"]
    assert page.total_size == 1


async def test_cursor_pagination_walks_every_page_once(store: TaskStore) -> None:
    for minute, task_id in enumerate(["t-0", "t-1", "t-2", "t-3", "t-4"]):
        await store.save(ALICE, make_task(task_id, context_id="ctx-a", when=at(minute)))
    # Noise the filter must exclude from both the pages and the total.
    await store.save(ALICE, make_task("other-1", context_id="ctx-b", when=at(9)))
    await store.save(BOB, make_task("bobs", context_id="ctx-a", when=at(9)))

    first = await store.list(ALICE, TaskQuery(context_id="ctx-a", page_size=2))
    second = await store.list(
        ALICE, TaskQuery(context_id="ctx-a", page_size=2, page_token=first.next_page_token)
    )
    third = await store.list(
        ALICE, TaskQuery(context_id="ctx-a", page_size=2, page_token=second.next_page_token)
    )

    assert ids(first.tasks) == ["t-4", "t-3"]
    assert ids(second.tasks) == ["t-2", "t-1"]
    assert ids(third.tasks) == ["t-0"]
    assert first.next_page_token != ""
    assert second.next_page_token not in ("", first.next_page_token)
    assert third.next_page_token == ""
    assert [p.total_size for p in (first, second, third)] == [5, 5, 5]


async def test_pagination_with_ties_neither_skips_nor_repeats(store: TaskStore) -> None:
    for task_id in ["t-a", "t-b", "t-c", "t-d"]:
        await store.save(ALICE, make_task(task_id, when=at(0)))

    first = await store.list(ALICE, TaskQuery(page_size=2))
    second = await store.list(ALICE, TaskQuery(page_size=2, page_token=first.next_page_token))

    assert ids(first.tasks) == ["t-d", "t-c"]
    assert ids(second.tasks) == ["t-b", "t-a"]
    # An exact multiple of the page size: the last full page still ends the walk.
    assert second.next_page_token == ""


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


@pytest.mark.parametrize(
    "token",
    [
        "not a token!",
        b64(b"not json"),
        b64(b"[1, 2]"),
        b64(b'["only-one"]'),
        b64(b'["a", "b", "c"]'),
        b64(b"null"),
    ],
    ids=["garbage", "not-json", "not-strings", "too-short", "too-long", "null"],
)
async def test_invalid_page_token_is_invalid_params(store: TaskStore, token: str) -> None:
    await store.save(ALICE, make_task("t-1"))

    with pytest.raises(InvalidParamsError):
        await store.list(ALICE, TaskQuery(page_token=token))


async def test_fail_unfinished_fails_only_active_tasks(store: TaskStore) -> None:
    reason = "The daemon restarted while this task was running"
    submitted = make_task("t-sub", state=TaskState.SUBMITTED, when=at(1))
    working = make_task("t-work", state=TaskState.WORKING, when=at(2))
    waiting = make_task("t-input", state=TaskState.INPUT_REQUIRED, when=at(3))
    done = make_task("t-done", state=TaskState.COMPLETED, when=at(4))
    await store.save(ALICE, submitted)
    await store.save(BOB, working)
    await store.save(ALICE, waiting)
    await store.save(ALICE, done)
    # What a restart does: the process that ran them stops, the next one reconciles.
    await store.close()
    await store.open()

    count = await store.fail_unfinished(reason)

    assert count == 2
    for principal, task_id in [(ALICE, "t-sub"), (BOB, "t-work")]:
        failed = await store.get(principal, task_id)
        assert failed is not None
        assert failed.status.state is TaskState.FAILED
        assert failed.status.message is not None
        assert failed.status.message.parts[0].text == reason
    for principal, untouched in [(ALICE, waiting), (ALICE, done)]:
        loaded = await store.get(principal, untouched.id)
        assert loaded is not None
        assert loaded.dump() == untouched.dump()
    # The state filter sees the new state too (the SQLite store indexes it separately).
    assert ids((await store.list(ALICE, TaskQuery(state=TaskState.FAILED))).tasks) == ["t-sub"]
    assert (await store.list(BOB, TaskQuery(state=TaskState.WORKING))).tasks == []
    assert await store.fail_unfinished(reason) == 0


async def test_postgres_fails_only_the_tasks_of_replicas_that_are_gone(
    postgres_url: str,
) -> None:
    """Two replicas on one database: one stops while its task runs; the survivor's start-up
    reconciliation fails that task and leaves its own running task alone."""
    lost = PostgresTaskStore(PostgresDatabase(postgres_url))
    survivor = PostgresTaskStore(PostgresDatabase(postgres_url))
    await lost.open()
    await survivor.open()
    try:
        await lost.save(ALICE, make_task("t-lost", state=TaskState.WORKING))
        await survivor.save(ALICE, make_task("t-alive", state=TaskState.WORKING))
        assert await survivor.fail_unfinished("gone") == 0
        await lost.close()

        assert await survivor.fail_unfinished("replica lost") == 1

        failed = await survivor.get(ALICE, "t-lost")
        alive = await survivor.get(ALICE, "t-alive")
        assert failed is not None
        assert failed.status.state is TaskState.FAILED
        assert alive is not None
        assert alive.status.state is TaskState.WORKING
    finally:
        await survivor.close()


async def test_purge_terminal_deletes_only_old_terminal_tasks(store: TaskStore) -> None:
    cutoff = at(10)
    old_terminal = {
        "old-completed": TaskState.COMPLETED,
        "old-failed": TaskState.FAILED,
        "old-canceled": TaskState.CANCELED,
        "old-rejected": TaskState.REJECTED,
    }
    for task_id, state in old_terminal.items():
        await store.save(ALICE, make_task(task_id, state=state, when=at(1)))
    await store.save(BOB, make_task("bob-old-completed", state=TaskState.COMPLETED, when=at(2)))
    kept = {
        "new-completed": make_task("new-completed", state=TaskState.COMPLETED, when=at(11)),
        "old-working": make_task("old-working", state=TaskState.WORKING, when=at(1)),
        "old-input": make_task("old-input", state=TaskState.INPUT_REQUIRED, when=at(1)),
        "old-submitted": make_task("old-submitted", state=TaskState.SUBMITTED, when=at(1)),
    }
    for task in kept.values():
        await store.save(ALICE, task)

    count = await store.purge_terminal(cutoff)

    assert count == 5
    for task_id in old_terminal:
        assert await store.get(ALICE, task_id) is None
    assert await store.get(BOB, "bob-old-completed") is None
    remaining = await store.list(ALICE, TaskQuery())
    assert sorted(ids(remaining.tasks)) == sorted(kept)
    assert await store.purge_terminal(cutoff) == 0


async def test_data_survives_close_and_reopen(durable_engine: Engine) -> None:
    task = rich_task()
    async with durable_engine.opened() as first:
        await first.tasks.save(ALICE, task)
        await first.tasks.save(ALICE, make_task("t-old", when=at(0)))

    async with durable_engine.opened() as second:
        loaded = await second.tasks.get(ALICE, "t-rich")
        page = await second.tasks.list(ALICE, TaskQuery())

    assert loaded is not None
    assert loaded.dump() == task.dump()
    assert ids(page.tasks) == ["t-rich", "t-old"]


async def test_postgres_retention_runs_on_one_replica_only(postgres_url: str) -> None:
    leader = PostgresTaskStore(PostgresDatabase(postgres_url))
    other = PostgresTaskStore(PostgresDatabase(postgres_url))
    await leader.open()
    await other.open()
    try:
        await leader.save(ALICE, make_task("t-old", when=at(0)))

        assert await other.purge_terminal(at(60)) == 0
        assert await leader.purge_terminal(at(60)) == 1
    finally:
        await other.close()
        await leader.close()
