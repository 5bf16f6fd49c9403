"""One contract for every UsageStore: memory, SQLite and PostgreSQL keep one row per turn and
give them back oldest first, whatever they were added in one batch or many; SQLite and
PostgreSQL keep them across a reopen."""

from __future__ import annotations

import pytest

from core.storage.contracts import TurnUsage, UsageStore
from core.storage.kinds import Storage
from tests.storage.conftest import Engine


def usage(task: str, at: float, **fields: object) -> TurnUsage:
    return TurnUsage(task, "p", f"ctx-{task}", at, **fields)  # type: ignore[arg-type]


@pytest.fixture
def store(storage: Storage) -> UsageStore:
    return storage.usage


async def test_every_field_of_a_row_comes_back(store: UsageStore) -> None:
    row = usage(
        "t1",
        1_700_000_000.5,
        input_tokens=120,
        output_tokens=30,
        cache_read_tokens=100,
        cache_creation_tokens=10,
        cost_usd=0.0125,
        model="m-1",
    )

    await store.add(row)

    assert await store.load() == [row]


async def test_rows_come_back_oldest_first(store: UsageStore) -> None:
    late, early = usage("t2", 2000.0, output_tokens=2), usage("t1", 1000.0, output_tokens=1)

    await store.add(late)
    await store.add(early)

    assert [r.task_id for r in await store.load()] == ["t1", "t2"]


async def test_writes_queued_together_are_all_kept(store: UsageStore) -> None:
    first = store.add(usage("t1", 1.0))
    second = store.add(usage("t2", 2.0))
    await first
    await second

    assert [r.task_id for r in await store.load()] == ["t1", "t2"]


async def test_an_empty_store_loads_nothing(store: UsageStore) -> None:
    assert await store.load() == []


async def test_rows_survive_a_reopen(durable_engine: Engine) -> None:
    async with durable_engine.opened() as first:
        await first.usage.add(usage("t1", 1.0, input_tokens=3))

    async with durable_engine.opened() as second:
        rows = await second.usage.load()

    assert rows == [usage("t1", 1.0, input_tokens=3)]
