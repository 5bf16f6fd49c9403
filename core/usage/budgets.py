"""Budgets (`budget.*`): what a turn, a context and a principal (over a rolling window) may
spend, in cost, tokens and turns, and the usage that counts against them.

`Budgets` is the engine's `TurnHooks`: `prepare` counts a starting turn and hands it what it
may still cost (`Turn.max_cost_usd`, for agents that cap their own spending); `charge` adds each
Usage event and stops the turn (`StopTurnError`, naming the budget) once a budget is exceeded;
`release` keeps the turn's usage in the store (usage is added up whether or not a budget is
set). `refuse` is the admission check: a message whose context or principal has reached a
budget is refused before anything is stored.

Totals live in memory, built from the store at `open`, so the admission check never waits on
disk; with no budget set, only the rows are written (no totals are kept). A turn is stopped
when a total goes over its maximum; a turn is refused once a total has reached it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import structlog

from core.backend import Turn, Usage
from core.engine.turn.plugins import NO_REPORT, StopTurnError, TurnReport
from core.storage.usage import TurnUsage, UsageStore
from core.wire.errors import BudgetExceededError
from core.wire.models import Message

log = structlog.get_logger(__name__)

Clock = Callable[[], float]


@dataclass(frozen=True)
class Limit:
    """Maxima of one budget; None = no maximum."""

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_turns: int | None = None

    @property
    def any(self) -> bool:
        return (self.max_cost_usd, self.max_tokens, self.max_turns) != (None, None, None)


@dataclass(frozen=True)
class BudgetConfig:
    per_turn: Limit = field(default_factory=Limit)
    per_context: Limit = field(default_factory=Limit)
    per_principal: Limit = field(default_factory=Limit)
    window: float | None = None  # s the per-principal budget looks back; None = all time

    @property
    def any(self) -> bool:
        return self.per_turn.any or self.per_context.any or self.per_principal.any


@dataclass
class Tally:
    cost_usd: float = 0.0
    tokens: int = 0
    turns: int = 0

    def add(self, cost: float, tokens: int, turns: int) -> None:
        self.cost_usd += cost
        self.tokens += tokens
        self.turns += turns


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


def _shown(key: str, limit: Limit) -> str:
    if key == "maxCostUsd":
        return f"{limit.max_cost_usd:g} USD"
    if key == "maxTokens":
        return f"{limit.max_tokens} tokens"
    return f"{limit.max_turns} turns"


def _first_over(
    checks: tuple[tuple[str, Limit, Tally | None], ...], *, reached: bool
) -> tuple[str, str, str] | None:
    """(budget, key, maximum shown) of the first budget over, else None."""
    for name, limit, tally in checks:
        key = _over(limit, tally, reached=reached) if tally is not None else None
        if key is not None:
            return name, key, _shown(key, limit)
    return None


_WHOSE = {"perTurn": "this turn", "perContext": "this context", "perPrincipal": "this caller"}


@dataclass
class _Window:
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


@dataclass
class _Running:
    turn: Turn
    usage: Tally = field(default_factory=Tally)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    model: str | None = None


class Budgets:
    def __init__(self, config: BudgetConfig, store: UsageStore, clock: Clock = time.time) -> None:
        self._config = config
        self._store = store
        self._clock = clock
        self._contexts: dict[tuple[str, str], Tally] = {}
        self._principals: dict[str, _Window] = {}
        self._running: dict[tuple[str, str], _Running] = {}

    @property
    def config(self) -> BudgetConfig:
        return self._config

    async def open(self) -> None:
        """Open the store and add up what it holds (only when a budget needs the totals)."""
        await self._store.open()
        if not self._config.any:
            return
        for row in await self._store.load():
            self._count(row.principal, row.context_id, row.at, row.cost_usd, row.tokens, 1)

    def _count(  # noqa: PLR0917 - one entry's fields, always passed in this order
        self, principal: str, context_id: str, at: float, cost: float, tokens: int, turns: int
    ) -> None:
        """Add to the totals of the context and of the principal (its window: the entries
        are kept only when the window is rolling)."""
        self._context(principal, context_id).add(cost, tokens, turns)
        window = self._window(principal)
        if self._config.window is None:
            window.tally.add(cost, tokens, turns)
        else:
            window.add(at, cost, tokens, turns)

    async def close(self) -> None:
        await self._store.close()

    def _context(self, principal: str, context_id: str) -> Tally:
        return self._contexts.setdefault((principal, context_id), Tally())

    def _window(self, principal: str) -> _Window:
        return self._principals.setdefault(principal, _Window())

    def _principal(self, principal: str) -> Tally:
        window = self._config.window
        return self._window(principal).since(self._clock() - window if window else None)

    def usage(self, principal: str, context_id: str) -> tuple[Tally, Tally]:
        """What a context and its principal (in the window) have used."""
        return self._context(principal, context_id), self._principal(principal)

    # ----- admission -------------------------------------------------------------------------

    def check_message(self, message: Message) -> None:
        return None

    def check_admission(self, principal: str, context_id: str) -> None:
        self.refuse(principal, context_id)

    def refuse(self, principal: str, context_id: str) -> None:
        """Raise BudgetExceededError when the context or the principal has reached a budget."""
        config = self._config
        if not config.any:
            return
        spent = _first_over(
            (
                ("perContext", config.per_context, self._contexts.get((principal, context_id))),
                ("perPrincipal", config.per_principal, self._principal(principal)),
            ),
            reached=True,
        )
        if spent is not None:
            name, key, shown = spent
            raise BudgetExceededError(
                f"The budget of {_WHOSE[name]} is spent (budget.{name}.{key}: {shown}); nothing "
                "more runs until it is raised"
                + (" or the window moves on" if name == "perPrincipal" else "")
            )

    # ----- TurnHooks -------------------------------------------------------------------------

    async def prepare(self, turn: Turn) -> Turn:
        key = (turn.principal, turn.context_id)
        self._running[key] = _Running(turn)
        if not self._config.any:
            return turn
        self._count(*key, self._clock(), 0.0, 0, 1)
        left = self._cost_left(*key)
        return replace(turn, max_cost_usd=left) if left is not None else turn

    def _cost_left(self, principal: str, context_id: str) -> float | None:
        config = self._config
        context, spent = self.usage(principal, context_id)
        left = [
            maximum
            for maximum in (
                config.per_turn.max_cost_usd,
                _minus(config.per_context.max_cost_usd, context.cost_usd),
                _minus(config.per_principal.max_cost_usd, spent.cost_usd),
            )
            if maximum is not None
        ]
        return min(left) if left else None

    async def finish(self, turn: Turn) -> TurnReport:
        return NO_REPORT

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        config = self._config
        running = self._running.get((principal, context_id))
        cost = usage.cost_usd or 0.0
        tokens = usage.input_tokens + usage.output_tokens
        if running is not None:
            running.usage.add(cost, tokens, 0)
            running.input_tokens += usage.input_tokens
            running.output_tokens += usage.output_tokens
            running.cache_read += usage.cache_read_tokens
            running.cache_creation += usage.cache_creation_tokens
            running.model = usage.model or running.model
        if not config.any:
            return
        self._count(principal, context_id, self._clock(), cost, tokens, 0)
        context, spent = self.usage(principal, context_id)
        over = _first_over(
            (
                ("perTurn", config.per_turn, running.usage if running is not None else None),
                ("perContext", config.per_context, context),
                ("perPrincipal", config.per_principal, spent),
            ),
            reached=False,
        )
        if over is not None:
            name, key, shown = over
            raise StopTurnError(
                f"The turn went over budget.{name}.{key} ({shown} for {_WHOSE[name]}); the "
                "agent was stopped."
            )

    async def release(self, turn: Turn) -> None:
        running = self._running.pop((turn.principal, turn.context_id), None)
        if running is None or not (
            running.usage.tokens or running.usage.cost_usd or self._config.any
        ):
            # Nothing to keep: a turn that reported no usage counts only against a budget.
            return
        row = TurnUsage(
            task_id=turn.task_id,
            principal=turn.principal,
            context_id=turn.context_id,
            at=self._clock(),
            input_tokens=running.input_tokens,
            output_tokens=running.output_tokens,
            cache_read_tokens=running.cache_read,
            cache_creation_tokens=running.cache_creation,
            cost_usd=running.usage.cost_usd,
            model=running.model,
        )
        try:
            await self._store.add(row)
        except Exception:
            log.exception("usage.not_recorded", task_id=turn.task_id)


def _minus(maximum: float | None, spent: float) -> float | None:
    return None if maximum is None else max(0.0, maximum - spent)
