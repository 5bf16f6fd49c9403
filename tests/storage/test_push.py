"""One contract for every PushStore (configs and the outbox): memory, SQLite and PostgreSQL
behave alike; the outbox survives a reopen on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from core.storage.contracts import Delivery, PushStore, PushVersion, StoredConfig
from core.storage.kinds import Storage
from core.wire.models import TaskPushNotificationConfig
from tests.storage.conftest import Engine


def config(task: str, config_id: str, url: str = "https://hooks.example/a") -> StoredConfig:
    return stored("p", task, config_id, url)


def stored(
    principal: str, task: str, config_id: str, url: str, version: PushVersion = "1.0"
) -> StoredConfig:
    body = TaskPushNotificationConfig(id=config_id, task_id=task, url=url)
    return StoredConfig(principal, version, body)


def delivery(task: str, config_id: str, body: str) -> Delivery:
    return Delivery(0, "p", "1.0", config(task, config_id).config, body)


@pytest.fixture
def store(storage: Storage) -> PushStore:
    return storage.push


async def test_a_config_is_kept_with_its_version_and_replaced_by_id(store: PushStore) -> None:
    await store.put_config(stored("p", "t1", "c1", "https://hooks.example/a", "0.3"))
    await store.put_config(stored("p", "t1", "c1", "https://hooks.example/b", "0.3"))

    got = await store.get_config("p", "t1", "c1")

    assert got is not None
    assert got.version == "0.3"
    assert got.config.url == "https://hooks.example/b"
    assert [c.id for c in await store.list_configs("p", "t1")] == ["c1"]


async def test_configs_are_scoped_to_their_principal(store: PushStore) -> None:
    await store.put_config(stored("alice", "t1", "c1", "https://hooks.example/a"))

    assert await store.get_config("bob", "t1", "c1") is None
    assert await store.list_configs("bob", "t1") == []
    await store.delete_config("bob", "t1", "c1")
    assert await store.get_config("alice", "t1", "c1") is not None


async def test_listing_deleting_and_the_watched_tasks(store: PushStore) -> None:
    await store.put_config(config("t1", "c1"))
    await store.put_config(config("t1", "c2"))
    await store.put_config(config("t2", "c1"))

    assert sorted(c.id for c in await store.list_configs("p", "t1")) == ["c1", "c2"]
    assert await store.watched_tasks() == {"t1", "t2"}

    await store.delete_config("p", "t1", "c1")
    assert [c.id for c in await store.list_configs("p", "t1")] == ["c2"]
    await store.delete_task_configs("p", "t1")
    assert await store.list_configs("p", "t1") == []
    assert await store.watched_tasks() == {"t2"}


async def test_the_outbox_keeps_rows_in_the_order_they_were_added(store: PushStore) -> None:
    added = await store.add_deliveries(
        [delivery("t1", "c1", '{"n":1}'), delivery("t1", "c1", '{"n":2}')]
    )
    added += await store.add_deliveries([delivery("t2", "c1", '{"n":3}')])

    pending = await store.pending()

    assert [d.body for d in pending] == ['{"n":1}', '{"n":2}', '{"n":3}']
    assert [d.seq for d in pending] == [d.seq for d in added]
    assert sorted(d.seq for d in added) == [d.seq for d in added]
    assert pending[0].lane == ("t1", "c1")
    assert all(d.attempts == 0 for d in pending)


async def test_an_attempt_is_recorded_and_a_delivered_row_removed(store: PushStore) -> None:
    first, second = await store.add_deliveries(
        [delivery("t1", "c1", '{"n":1}'), delivery("t1", "c1", '{"n":2}')]
    )

    await store.record_attempt(first.seq, 2)
    await store.remove_delivery(second.seq)

    (left,) = await store.pending()
    assert (left.seq, left.attempts, left.body) == (first.seq, 2, '{"n":1}')


async def test_a_delivery_outlives_its_config(store: PushStore) -> None:
    await store.put_config(config("t1", "c1"))
    await store.add_deliveries([delivery("t1", "c1", '{"kept":true}')])

    await store.delete_task_configs("p", "t1")

    assert [d.body for d in await store.pending()] == ['{"kept":true}']


async def test_the_outbox_survives_a_reopen(durable_engine: Engine) -> None:
    async with durable_engine.opened() as first:
        await first.push.put_config(config("t1", "c1"))
        await first.push.add_deliveries([delivery("t1", "c1", '{"pending":true}')])

    async with durable_engine.opened() as again:
        assert [d.body for d in await again.push.pending()] == ['{"pending":true}']
        assert await again.push.watched_tasks() == {"t1"}
