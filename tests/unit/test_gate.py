"""The turn gate: free places are taken at once, freed ones go to the oldest waiter, and a
waiter that is cancelled neither keeps nor loses a place."""

from __future__ import annotations

import anyio
import pytest

from core.engine.gate import Gate

pytestmark = pytest.mark.anyio


async def _enter(gate: Gate, name: str, order: list[str], release: anyio.Event) -> None:
    async with gate:
        order.append(name)
        await release.wait()


async def test_waiters_enter_in_arrival_order_as_places_free_up() -> None:
    gate, release = Gate(2), anyio.Event()
    order: list[str] = []
    async with anyio.create_task_group() as tg:
        for name in "abcde":
            tg.start_soon(_enter, gate, name, order, release)
            await anyio.wait_all_tasks_blocked()
        assert order == ["a", "b"]
        release.set()
    assert order == ["a", "b", "c", "d", "e"]


async def test_a_free_place_is_taken_without_waiting() -> None:
    gate = Gate(1)
    with anyio.fail_after(1):
        async with gate:
            pass
        async with gate:
            pass


async def test_a_cancelled_waiter_leaves_the_queue_and_the_next_one_enters() -> None:
    gate = Gate(1)
    order: list[str] = []
    holder_release, other_release = anyio.Event(), anyio.Event()
    other_release.set()
    async with anyio.create_task_group() as tg:
        tg.start_soon(_enter, gate, "holder", order, holder_release)
        await anyio.wait_all_tasks_blocked()
        with anyio.CancelScope() as waiting:
            waiting.cancel()
            await _enter(gate, "cancelled", order, other_release)
        tg.start_soon(_enter, gate, "next", order, other_release)
        await anyio.wait_all_tasks_blocked()
        holder_release.set()
    assert order == ["holder", "next"]
    async with gate:  # every place came back
        pass


@pytest.mark.parametrize("cancel_first", [False, True])
async def test_a_waiter_cancelled_as_a_place_frees_does_not_lose_the_place(
    cancel_first: bool,
) -> None:
    """The place goes to a waiter whose wait is cancelled in the same step (`cancel_first`:
    just before it frees, so the gate skips that waiter; else just after, so the waiter passes
    it on): either way the next waiter gets in and no place is lost."""
    gate = Gate(1)
    order: list[str] = []
    release = anyio.Event()
    release.set()
    async with anyio.create_task_group() as tg:
        await gate.__aenter__()
        scope = anyio.CancelScope()

        async def doomed() -> None:
            with scope:
                await _enter(gate, "doomed", order, release)

        tg.start_soon(doomed)
        await anyio.wait_all_tasks_blocked()
        tg.start_soon(_enter, gate, "after", order, release)
        await anyio.wait_all_tasks_blocked()
        if cancel_first:
            scope.cancel()
        await gate.__aexit__(None, None, None)
        if not cancel_first:
            scope.cancel()
    if cancel_first:
        assert order == ["after"]
    else:
        # Whether `doomed` got in before its cancellation landed or not.
        assert order[-1] == "after"
    with anyio.fail_after(1):
        async with gate:
            pass
