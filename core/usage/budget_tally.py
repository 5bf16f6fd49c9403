"""The arithmetic of budgets: maxima (`Limit`), totals (`Tally`), a principal's rolling window
(`Window`) and which maximum a total has reached or gone over."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import cached_property


@dataclass(frozen=True)
class Limit:
    """Maxima of one budget; None = no maximum."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_turns: int | None = None

    @cached_property  # asked several times per turn; a Limit never changes
    def any(self) -> bool:
        return (self.max_cost_usd, self.max_tokens, self.max_turns) != (None, None, None)


@dataclass
class Tally:
    cost_usd: float = 0.0
    tokens: int = 0
    turns: int = 0

    def add(self, cost: float, tokens: int, turns: int) -> None:
        self.cost_usd += cost
        self.tokens += tokens
        self.turns += turns

    def plus(self, other: Tally) -> Tally:
        return Tally(
            self.cost_usd + other.cost_usd, self.tokens + other.tokens, self.turns + other.turns
        )


def _over(limit: Limit, tally: Tally, *, reached: bool) -> str | None:
    """The key of the first maximum `tally` has reached (`reached`) or exceeded, else None."""
    checks = (
        ("maxCostUsd", limit.max_cost_usd, tally.cost_usd),
        ("maxTokens", limit.max_tokens, tally.tokens),
        ("maxTurns", limit.max_turns, tally.turns),
    )
    for key, maximum, value in checks:
        if maximum is not None and (value >= maximum if reached else value > maximum):
            return key
    return None


def shown(key: str, limit: Limit) -> str:
    if key == "maxCostUsd":
        return f"{limit.max_cost_usd:g} USD"
    if key == "maxTokens":
        return f"{limit.max_tokens} tokens"
    return f"{limit.max_turns} turns"


def first_over(
    checks: tuple[tuple[str, Limit, Tally | None], ...], *, reached: bool
) -> tuple[str, str, str] | None:
    """(budget, key, maximum shown) of the first budget over, else None."""
    for name, limit, tally in checks:
        key = _over(limit, tally, reached=reached) if tally is not None else None
        if key is not None:
            return name, key, shown(key, limit)
    return None


@dataclass
class Window:
    """A principal's usage over the rolling window: entries (at, cost, tokens, turns) and
    their sum."""

    entries: deque[tuple[float, float, int, int]] = field(default_factory=deque)
    tally: Tally = field(default_factory=Tally)

    def add(self, at: float, cost: float, tokens: int, turns: int) -> None:
        self.entries.append((at, cost, tokens, turns))
        self.tally.add(cost, tokens, turns)

    def since(self, start: float | None) -> Tally:
        entries = self.entries
        while start is not None and entries and entries[0][0] < start:
            _, cost, tokens, turns = entries.popleft()
            self.tally.add(-cost, -tokens, -turns)
        return self.tally
