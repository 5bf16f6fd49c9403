"""The SessionStore contract on memory, SQLite and PostgreSQL; mappings and tombstones survive
a reopen on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from core.sessions.policy import is_expired
from core.storage.contracts import SessionRecord, SessionStore
from core.storage.kinds import Storage
from core.storage.postgres.database import PostgresDatabase
from core.storage.postgres.sessions import PostgresSessionStore
from tests.storage.conftest import Engine

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def record(
    context: str, session: str, created: datetime = T0, principal: str = "p"
) -> SessionRecord:
    return SessionRecord(principal, context, "scripted", session, created, created)


@pytest.fixture
def store(storage: Storage) -> SessionStore:
    return storage.sessions


async def test_put_replaces_the_mapping_of_a_key(store: SessionStore) -> None:
    await store.put(record("c", "s1"))
    await store.put(record("c", "s2"))

    got = await store.get("p", "c")

    assert got is not None
    assert got.session_id == "s2"
    assert await store.count() == 1


async def test_keys_are_scoped_by_principal(store: SessionStore) -> None:
    await store.put(record("c", "alice-s", principal="alice"))

    assert await store.get("bob", "c") is None
    assert await store.delete("bob", "c", "alice-s") is False


async def test_delete_only_removes_the_named_session(store: SessionStore) -> None:
    await store.put(record("c", "s2"))

    assert await store.delete("p", "c", "s1") is False
    assert await store.delete("p", "c", "s2") is True
    assert await store.get("p", "c") is None


async def test_created_before_compares_instants(store: SessionStore) -> None:
    await store.put(record("whole", "s1", T0))
    await store.put(record("fraction", "s2", T0 + timedelta(microseconds=500)))
    await store.put(record("later", "s3", T0 + timedelta(seconds=2)))

    found = await store.created_before(T0 + timedelta(seconds=1))

    assert sorted(r.session_id for r in found) == ["s1", "s2"]


async def test_records_round_trip(store: SessionStore) -> None:
    original = SessionRecord("p", "c", "claude", "s", T0, T0 + timedelta(seconds=3), turns=4)
    await store.put(original)

    assert await store.get("p", "c") == original


async def test_mappings_survive_a_reopen(durable_engine: Engine) -> None:
    async with durable_engine.opened() as first:
        await first.sessions.put(record("c", "s1"))

    async with durable_engine.opened() as second:
        got = await second.sessions.get("p", "c")

    assert got == record("c", "s1")


@pytest.mark.parametrize(
    ("age", "ttl", "expired"),
    [
        (timedelta(seconds=59), timedelta(minutes=1), False),
        (timedelta(minutes=1), timedelta(minutes=1), True),
        (timedelta(days=9999), None, False),
    ],
)
def test_expiry_counts_from_creation(age: timedelta, ttl: timedelta | None, expired: bool) -> None:
    used_just_now = SessionRecord("p", "c", "b", "s", T0, T0 + age)

    assert is_expired(used_just_now, T0 + age, ttl) is expired


async def test_expire_many_removes_only_the_named_sessions(store: SessionStore) -> None:
    await store.put(record("a", "s1"))
    await store.put(record("b", "s2"))
    await store.put(record("c", "s3"))

    removed = await store.expire_many(
        [record("a", "s1"), record("b", "stale"), record("c", "s3")], T0
    )

    assert [r.session_id for r in removed] == ["s1", "s3"]
    assert await store.count() == 1


async def test_expire_many_leaves_one_tombstone_per_key_removed(store: SessionStore) -> None:
    await store.put(record("a", "s1"))
    await store.put(record("b", "s2"))

    await store.expire_many([record("a", "s1"), record("b", "stale")], T0)

    # Taken once: the next turn learns of the expiry, the one after it does not.
    assert await store.take_tombstone("p", "a") is True
    assert await store.take_tombstone("p", "a") is False
    # Nothing was removed for b (the mapping named another session), so no tombstone either.
    assert await store.take_tombstone("p", "b") is False
    assert await store.get("p", "b") is not None


async def test_tombstones_are_scoped_by_principal(store: SessionStore) -> None:
    await store.put(record("c", "alice-s", principal="alice"))
    await store.expire_many([record("c", "alice-s", principal="alice")], T0)

    assert await store.take_tombstone("bob", "c") is False
    assert await store.take_tombstone("alice", "c") is True


async def test_purge_tombstones_forgets_only_the_older_ones(store: SessionStore) -> None:
    for context, at in [
        ("old", T0),
        ("edge", T0 + timedelta(seconds=10)),
        ("new", T0 + timedelta(seconds=20)),
    ]:
        await store.put(record(context, f"s-{context}"))
        await store.expire_many([record(context, f"s-{context}")], at)

    purged = await store.purge_tombstones(T0 + timedelta(seconds=10))

    assert purged == 1
    assert await store.take_tombstone("p", "old") is False
    assert await store.take_tombstone("p", "edge") is True
    assert await store.take_tombstone("p", "new") is True


async def test_tombstones_survive_a_reopen(durable_engine: Engine) -> None:
    async with durable_engine.opened() as first:
        await first.sessions.put(record("c", "s1"))
        await first.sessions.expire_many([record("c", "s1")], T0)

    async with durable_engine.opened() as second:
        taken = await second.sessions.take_tombstone("p", "c")

    assert taken is True


async def test_postgres_sweep_candidates_come_from_one_replica_only(postgres_url: str) -> None:
    """Two replicas on one database: the oldest live one sweeps; once it is gone, the other."""
    first = PostgresSessionStore(PostgresDatabase(postgres_url))
    second = PostgresSessionStore(PostgresDatabase(postgres_url))
    await first.open()
    await second.open()
    try:
        await first.put(record("c", "s1"))
        later = T0 + timedelta(days=1)

        assert [r.session_id for r in await first.created_before(later)] == ["s1"]
        assert await second.created_before(later) == []
        await first.close()
        assert [r.session_id for r in await second.created_before(later)] == ["s1"]
    finally:
        await second.close()
