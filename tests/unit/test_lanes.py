"""TurnLanes: one turn at a time per (principal, context), FIFO, bounded."""

from __future__ import annotations

import anyio
import pytest

from core.engine.lanes import LaneFullError, TurnLanes
from core.wire.errors import UnsupportedOperationError


async def test_turns_of_one_context_run_one_at_a_time_in_fifo_order() -> None:
    lanes = TurnLanes()
    count = 4
    log: list[str] = []
    inside = 0
    most_inside = 0
    queued = [anyio.Event() for _ in range(count)]
    first_entered = anyio.Event()
    release_first = anyio.Event()

    async def turn(index: int) -> None:
        nonlocal inside, most_inside
        lane = lanes.reserve("alice", "ctx")
        queued[index].set()
        async with lanes.turn("alice", "ctx", lane):
            inside += 1
            most_inside = max(most_inside, inside)
            log.append(f"enter {index}")
            if index == 0:
                first_entered.set()
                await release_first.wait()
            else:
                # Yield inside the turn: a lane that let the next turn in would interleave here.
                await anyio.lowlevel.checkpoint()
            log.append(f"exit {index}")
            inside -= 1

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for index in range(count):
                tg.start_soon(turn, index)
            await first_entered.wait()
            for event in queued:
                await event.wait()
            # Everyone has queued behind turn 0, which still holds the lane.
            assert log == ["enter 0"]
            release_first.set()

    assert log == [f"{step} {i}" for i in range(count) for step in ("enter", "exit")]
    assert most_inside == 1


async def test_different_contexts_and_principals_run_concurrently() -> None:
    lanes = TurnLanes()
    keys = [("alice", "ctx-a"), ("alice", "ctx-b"), ("bob", "ctx-a")]
    entered = {key: anyio.Event() for key in keys}
    release = anyio.Event()

    async def turn(principal: str, context_id: str) -> None:
        lane = lanes.reserve(principal, context_id)
        async with lanes.turn(principal, context_id, lane):
            entered[(principal, context_id)].set()
            await release.wait()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            for principal, context_id in keys:
                tg.start_soon(turn, principal, context_id)
            # Each turn holds its lane until released, so all three are inside at once.
            for event in entered.values():
                await event.wait()
            release.set()


async def test_reserve_beyond_max_queued_raises_lane_full() -> None:
    lanes = TurnLanes(max_queued=2)
    # One running turn plus `max_queued` waiting ones.
    for _ in range(3):
        lanes.reserve("alice", "ctx")

    with pytest.raises(LaneFullError) as caught:
        lanes.reserve("alice", "ctx")

    assert isinstance(caught.value, UnsupportedOperationError)
    # The limit is per lane: other contexts and principals are unaffected.
    lanes.reserve("alice", "other-ctx")
    lanes.reserve("bob", "ctx")


async def test_a_finished_turn_frees_its_place_in_the_lane() -> None:
    lanes = TurnLanes(max_queued=0)
    lane = lanes.reserve("alice", "ctx")
    with pytest.raises(LaneFullError):
        lanes.reserve("alice", "ctx")

    async with lanes.turn("alice", "ctx", lane):
        pass

    again = lanes.reserve("alice", "ctx")
    async with lanes.turn("alice", "ctx", again):
        pass


async def test_a_failing_turn_releases_the_lane() -> None:
    lanes = TurnLanes(max_queued=0)
    lane = lanes.reserve("alice", "ctx")

    with pytest.raises(RuntimeError, match="boom"):
        async with lanes.turn("alice", "ctx", lane):
            raise RuntimeError("boom")

    # The place is free again (max_queued=0 would refuse a second holder) and the lock too.
    entered = anyio.Event()
    with anyio.fail_after(5):
        async with lanes.turn("alice", "ctx", lanes.reserve("alice", "ctx")):
            entered.set()
    assert entered.is_set()


async def test_a_turn_cancelled_while_queued_gives_up_its_place() -> None:
    lanes = TurnLanes(max_queued=1)
    queued = anyio.Event()
    finished = anyio.Event()
    waiter_scope = anyio.CancelScope()
    waiter_entered = False

    async def waiter() -> None:
        nonlocal waiter_entered
        try:
            with waiter_scope:
                lane = lanes.reserve("alice", "ctx")
                queued.set()
                async with lanes.turn("alice", "ctx", lane):
                    waiter_entered = True
        finally:
            finished.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            async with lanes.turn("alice", "ctx", lanes.reserve("alice", "ctx")):
                tg.start_soon(waiter)
                await queued.wait()
                with pytest.raises(LaneFullError):
                    lanes.reserve("alice", "ctx")

                waiter_scope.cancel()
                await finished.wait()

                replacement = lanes.reserve("alice", "ctx")
            async with lanes.turn("alice", "ctx", replacement):
                pass

    assert not waiter_entered
