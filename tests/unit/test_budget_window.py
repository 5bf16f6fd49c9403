"""The per-principal budget looks back over a rolling window: spent usage stops counting once
the window has moved past it, and totals come back from the store after a restart."""

from __future__ import annotations

import pytest

from core.backend import Turn, Usage
from core.storage.memory import InMemoryUsageStore
from core.usage.budget_tally import Limit
from core.usage.budgets import BudgetConfig, Budgets
from core.wire.errors import BudgetExceededError


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def turn(context: str) -> Turn:
    return Turn("alice", context, f"task-{context}", "m", None, ())


def admits(budgets: Budgets, principal: str, context: str) -> None:
    """A turn of `principal` in `context` is admitted (its reservation given back at once)."""
    budgets.reserve(principal, context, "probe")
    budgets.unreserve("probe")


async def run_turn(budgets: Budgets, context: str, cost: float) -> None:
    started = await budgets.prepare(turn(context))
    await budgets.charge("alice", context, Usage(100, 10, cost_usd=cost))
    await budgets.release(started)


async def test_usage_older_than_the_window_no_longer_counts() -> None:
    clock, store = Clock(), InMemoryUsageStore()
    config = BudgetConfig(per_principal=Limit(max_cost_usd=1.0), window=3600)
    budgets = Budgets(config, store, clock)
    await budgets.open()
    await run_turn(budgets, "a", 1.0)

    with pytest.raises(BudgetExceededError, match=r"budget\.perPrincipal\.maxCostUsd"):
        admits(budgets, "alice", "b")
    admits(budgets, "bob", "b")  # another caller has a budget of its own
    clock.now += 3601
    admits(budgets, "alice", "b")

    restarted = Budgets(config, store, clock)
    await restarted.open()
    admits(restarted, "alice", "b")
    clock.now -= 3601
    reopened = Budgets(config, store, clock)
    await reopened.open()
    with pytest.raises(BudgetExceededError):
        admits(reopened, "alice", "b")


async def test_the_turn_is_told_what_it_may_still_cost() -> None:
    config = BudgetConfig(per_turn=Limit(max_cost_usd=0.5), per_context=Limit(max_cost_usd=1.0))
    budgets = Budgets(config, InMemoryUsageStore(), Clock())
    await budgets.open()
    first = await budgets.prepare(turn("a"))
    await budgets.charge("alice", "a", Usage(1, 1, cost_usd=0.4))
    await budgets.release(first)
    await run_turn(budgets, "a", 0.4)

    started = await budgets.prepare(turn("a"))

    assert first.max_cost_usd == pytest.approx(0.5)
    assert started.max_cost_usd == pytest.approx(0.2)
