"""Reservations (core/usage/budgets.py): what an admitted turn holds, what it is handed, who
is stopped when one turn overshoots, and that what a turn held comes back."""

from __future__ import annotations

import pytest

from core.backend import Turn, Usage
from core.engine.turn.plugins import StopTurnError
from core.storage.memory import InMemoryUsageStore
from core.usage.budget_tally import Limit
from core.usage.budgets import BudgetConfig, Budgets
from core.wire.errors import BudgetExceededError


def turn(task: str, context: str) -> Turn:
    return Turn("alice", context, task, "m", None, ())


async def budgets(
    *, per_context: Limit | None = None, per_principal: Limit | None = None
) -> Budgets:
    config = BudgetConfig(
        per_context=per_context or Limit(), per_principal=per_principal or Limit()
    )
    made = Budgets(config, InMemoryUsageStore())
    await made.open()
    return made


async def test_each_turn_is_handed_its_reservation_and_the_overshooter_alone_is_stopped() -> None:
    made = await budgets(per_principal=Limit(max_cost_usd=3.0))
    # Bob's turn costs 1 USD: that is what a turn is estimated to cost from now on.
    made.reserve("bob", "b", "warm")
    warm = await made.prepare(Turn("bob", "b", "warm", "m", None, ()))
    await made.charge("bob", "b", Usage(1, 1, cost_usd=1.0))
    await made.release(warm)

    for n in range(3):
        made.reserve("alice", f"c{n}", f"t{n}")
    with pytest.raises(BudgetExceededError, match="held in full"):
        made.reserve("alice", "c9", "t9")
    started = [await made.prepare(turn(f"t{n}", f"c{n}")) for n in range(3)]
    assert [t.max_cost_usd for t in started] == [pytest.approx(1.0)] * 3

    # t1 goes past its own reservation into what the others hold: it alone is stopped; the
    # turns within their reservations run on although the caller's total is now over.
    with pytest.raises(StopTurnError, match=r"budget\.perPrincipal\.maxCostUsd"):
        await made.charge("alice", "c1", Usage(1, 1, cost_usd=1.5))
    await made.charge("alice", "c0", Usage(1, 1, cost_usd=0.9))
    await made.charge("alice", "c2", Usage(1, 1, cost_usd=1.0))


async def test_what_a_turn_did_not_use_is_given_back_as_it_ends() -> None:
    made = await budgets(per_principal=Limit(max_cost_usd=3.0))
    # Nothing known yet: the first turn holds all that is left.
    made.reserve("alice", "a", "t1")
    with pytest.raises(BudgetExceededError, match="held in full"):
        made.reserve("alice", "b", "t2")
    first = await made.prepare(turn("t1", "a"))
    await made.charge("alice", "a", Usage(1, 1, cost_usd=0.5))
    await made.release(first)

    # 2.5 USD left, 0.5 a turn known: five turns fit, the sixth does not.
    for n in range(5):
        made.reserve("alice", f"c{n}", f"u{n}")
    with pytest.raises(BudgetExceededError, match="held in full"):
        made.reserve("alice", "c9", "u9")
    # A queued turn that never runs gives its hold back.
    made.unreserve("u0")
    made.reserve("alice", "c9", "u9")


async def test_max_turns_counts_admitted_turns() -> None:
    made = await budgets(per_context=Limit(max_turns=2))
    made.reserve("alice", "a", "t1")
    made.reserve("alice", "a", "t2")
    with pytest.raises(BudgetExceededError, match=r"budget\.perContext\.maxTurns"):
        made.reserve("alice", "a", "t3")
    made.reserve("alice", "b", "t4")  # another context has turns of its own
    started = await made.prepare(turn("t1", "a"))
    await made.release(started)
    with pytest.raises(BudgetExceededError, match=r"budget\.perContext\.maxTurns"):
        made.reserve("alice", "a", "t5")  # one ran, one is held: both count
