"""Budgets (`budget.*`): what a turn, a context and a principal (over a rolling window) may
spend, in cost, tokens and turns, and the usage that counts against them.

Budgets hold under concurrent requests because admission *reserves* what a turn may spend,
atomically with the check (`reserve` is synchronous, so no other admission runs between the
two): one turn, and a cost and a token amount, the per-turn maxima when `budget.perTurn` sets
them, else the mean of the last turns this daemon ran, else (nothing known yet) all that is
left. A start is refused once a context's or a principal's budget is used up, or fully held by
the turns admitted before it. A turn's reservation is held against its context and its
principal until the turn ends; its usage replaces it as it is reported.

`Budgets` is the engine's `TurnHooks`: `prepare` counts a starting turn and hands it what it
may still cost (`Turn.max_cost_usd`, for agents that cap their own spending: its reservation
plus what nobody holds); `charge` adds each Usage event and stops the turn (`StopTurnError`,
naming the budget) when it went past its own reservation and its context's or principal's
total, with what the other turns hold, is over a maximum (a turn within its reservation is
never stopped for another's overshoot); `finish` keeps the turn's usage row before its end
state is stored (so a row is durable before the answer leaves), `release` keeps it for a turn
that ended otherwise and gives back what the turn still held. `unreserve` gives back the
reservation of a turn that never ran (refused later in admission, cancelled while queued).

Totals live in memory, built from the store at `open`, so the admission check never waits on
disk; with no budget set, admission does nothing and only the rows are written.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cached_property

import structlog

from core.backend import Turn, Usage
from core.engine.turn.plugins import NO_REPORT, StopTurnError, TurnReport
from core.storage.contracts import TurnUsage, UsageStore
from core.usage.budget_tally import Limit, Tally, Window, first_over, shown
from core.wire.errors import BudgetExceededError
from core.wire.models import Message

log = structlog.get_logger(__name__)

Clock = Callable[[], float]
ESTIMATE_TURNS = 20  # settled turns whose mean usage a reservation estimates, without a cap
_EPSILON = 1e-9
_NONE = Tally()
_ONE_TURN = Tally(0.0, 0, 1)


@dataclass(frozen=True)
class BudgetConfig:
    per_turn: Limit = field(default_factory=Limit)
    per_context: Limit = field(default_factory=Limit)
    per_principal: Limit = field(default_factory=Limit)
    window: float | None = None  # s the per-principal budget looks back; None = all time

    @cached_property  # asked several times per turn; a BudgetConfig never changes
    def any(self) -> bool:
        return self.per_turn.any or self.per_context.any or self.per_principal.any


_WHOSE = {"perTurn": "this turn", "perContext": "this context", "perPrincipal": "this caller"}


@dataclass
class _Turn:
    """One admitted turn: what it reserved (held against its context and principal until it
    ends) and, once it runs, what it used."""

    principal: str
    context_id: str
    reserved: Tally = field(default_factory=Tally)
    used: Tally = field(default_factory=Tally)
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read: int = 0
    cache_creation: int = 0
    model: str | None = None
    recorded: bool = False

    def held(self) -> Tally:
        """What the reservation still holds beyond the usage reported so far."""
        reserved, used = self.reserved, self.used
        return Tally(
            max(0.0, reserved.cost_usd - used.cost_usd),
            max(0, reserved.tokens - used.tokens),
            max(0, reserved.turns - used.turns),
        )


class Budgets:
    def __init__(self, config: BudgetConfig, store: UsageStore, clock: Clock = time.time) -> None:
        self._config = config
        self._store = store
        self._clock = clock
        self._contexts: dict[tuple[str, str], Tally] = {}
        self._principals: dict[str, Window] = {}
        # What admitted turns hold: by (principal, context) and by (principal,).
        self._holds: dict[tuple[str, ...], Tally] = {}
        self._admitted: dict[str, _Turn] = {}  # by task id, from `reserve` to the turn's end
        self._running: dict[tuple[str, str], _Turn] = {}  # one turn per context runs at once
        self._recent: deque[tuple[float, int]] = deque(maxlen=ESTIMATE_TURNS)

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
            self._recent.append((row.cost_usd, row.tokens))

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

    def _window(self, principal: str) -> Window:
        return self._principals.setdefault(principal, Window())

    def _principal(self, principal: str) -> Tally:
        window = self._config.window
        return self._window(principal).since(self._clock() - window if window else None)

    def usage(self, principal: str, context_id: str) -> tuple[Tally, Tally]:
        """What a context and its principal (in the window) have used."""
        return self._context(principal, context_id), self._principal(principal)

    def _scopes(
        self, principal: str, context_id: str
    ) -> tuple[tuple[str, Limit, Tally, Tally], ...]:
        """(budget name, maxima, used, held by admitted turns) of the context and principal."""
        config = self._config
        context, spent = self.usage(principal, context_id)
        holds = self._holds
        return (
            ("perContext", config.per_context, context, holds.get((principal, context_id), _NONE)),
            ("perPrincipal", config.per_principal, spent, holds.get((principal,), _NONE)),
        )

    # ----- admission -------------------------------------------------------------------------

    def check_message(self, message: Message) -> None:
        return None

    def reserve(self, principal: str, context_id: str, task_id: str) -> None:
        """Admit a turn of task `task_id` against the budgets and hold what it may spend, or
        raise BudgetExceededError when a budget is used up or held in full by the turns
        admitted before. Synchronous: the check and the hold are one step. Pair with the
        turn's `prepare`/`release`, or `unreserve` when it never runs."""
        if not self._config.any:
            return
        scopes = self._scopes(principal, context_id)
        spent = first_over(tuple((n, lim, used) for n, lim, used, _ in scopes), reached=True)
        if spent is not None:
            name, key, maximum = spent
            raise BudgetExceededError(
                f"The budget of {_WHOSE[name]} is spent (budget.{name}.{key}: {maximum}); "
                "nothing more runs until it is raised"
                + (" or the window moves on" if name == "perPrincipal" else "")
            )
        committed = tuple(
            (name, limit, used.plus(held).plus(_ONE_TURN)) for name, limit, used, held in scopes
        )
        full = first_over(committed, reached=False) or _none_left(scopes)
        if full is not None:
            name, key, maximum = full
            raise BudgetExceededError(
                f"The budget of {_WHOSE[name]} (budget.{name}.{key}: {maximum}) is held in full "
                "by the turns running or queued now; send this again once one of them has ended"
            )
        turn = _Turn(principal, context_id, self._reservation(scopes))
        self._admitted[task_id] = turn
        self._hold(turn, turn.reserved, 1)

    def unreserve(self, task_id: str) -> None:
        """Give back what the turn of `task_id` still holds (a no-op once it has ended)."""
        turn = self._admitted.pop(task_id, None)
        if turn is not None and self._config.any:
            self._hold(turn, turn.held(), -1)

    def _reservation(self, scopes: tuple[tuple[str, Limit, Tally, Tally], ...]) -> Tally:
        """One turn, and the cost and tokens it may spend: the per-turn maximum, else the
        mean of the last turns, else everything left (bounded by what is left)."""
        cost, tokens = self._estimate()
        for _, limit, used, held in scopes:
            if limit.max_cost_usd is not None:
                cost = min(cost, limit.max_cost_usd - used.cost_usd - held.cost_usd)
            if limit.max_tokens is not None:
                tokens = min(tokens, limit.max_tokens - used.tokens - held.tokens)
        return Tally(
            0.0 if math.isinf(cost) else max(0.0, cost),
            0 if math.isinf(tokens) else max(0, int(tokens)),
            1,
        )

    def _estimate(self) -> tuple[float, float]:
        per_turn = self._config.per_turn
        recent = self._recent
        cost: float = math.inf
        tokens: float = math.inf
        if recent:
            cost = sum(c for c, _ in recent) / len(recent)
            tokens = sum(t for _, t in recent) / len(recent)
        if per_turn.max_cost_usd is not None:
            cost = per_turn.max_cost_usd
        if per_turn.max_tokens is not None:
            tokens = per_turn.max_tokens
        return cost, tokens

    def _hold(self, turn: _Turn, amount: Tally, sign: int) -> None:
        """Add `amount` (sign 1) to, or take it (-1) from, what the turn's context and
        principal hold."""
        holds = self._holds
        for key in ((turn.principal, turn.context_id), (turn.principal,)):
            tally = holds.get(key)
            if tally is None:
                tally = holds[key] = Tally()
            tally.add(sign * amount.cost_usd, sign * amount.tokens, sign * amount.turns)
            if tally.turns <= 0 and tally.cost_usd <= _EPSILON and tally.tokens <= 0:
                del holds[key]

    # ----- TurnHooks -------------------------------------------------------------------------

    async def prepare(self, turn: Turn) -> Turn:
        key = (turn.principal, turn.context_id)
        admitted = self._admitted.get(turn.task_id)
        if admitted is None:
            admitted = _Turn(*key)
            self._admitted[turn.task_id] = admitted
        self._running[key] = admitted
        if not self._config.any:
            return turn
        self._use(admitted, 0.0, 0, 1)
        left = self._cost_left(admitted)
        return replace(turn, max_cost_usd=left) if left is not None else turn

    def _use(self, turn: _Turn, cost: float, tokens: int, turns: int) -> None:
        """Count usage of `turn`: the totals grow, what its reservation holds shrinks."""
        before = turn.held()
        turn.used.add(cost, tokens, turns)
        after = turn.held()
        freed = Tally(
            before.cost_usd - after.cost_usd,
            before.tokens - after.tokens,
            before.turns - after.turns,
        )
        self._hold(turn, freed, -1)
        self._count(turn.principal, turn.context_id, self._clock(), cost, tokens, turns)

    def _cost_left(self, turn: _Turn) -> float | None:
        """What the turn may cost: the per-turn maximum, and in each budget its own hold plus
        what nobody holds."""
        config = self._config
        own = turn.held().cost_usd
        left = [
            maximum
            for maximum in (
                config.per_turn.max_cost_usd,
                *(
                    None
                    if limit.max_cost_usd is None
                    else max(0.0, limit.max_cost_usd - used.cost_usd - held.cost_usd + own)
                    for _, limit, used, held in self._scopes(turn.principal, turn.context_id)
                ),
            )
            if maximum is not None
        ]
        return min(left) if left else None

    async def finish(self, turn: Turn) -> TurnReport:
        """The turn answered (or asked, or failed): its usage row is stored now, before its
        end state is, so a caller who has the answer never finds the usage missing after a
        crash."""
        await self._record(turn)
        return NO_REPORT

    async def charge(self, principal: str, context_id: str, usage: Usage) -> None:
        config = self._config
        running = self._running.get((principal, context_id))
        cost = usage.cost_usd or 0.0
        tokens = usage.input_tokens + usage.output_tokens
        if running is None:
            running = self._running[(principal, context_id)] = _Turn(principal, context_id)
        running.input_tokens += usage.input_tokens
        running.output_tokens += usage.output_tokens
        running.cache_read += usage.cache_read_tokens
        running.cache_creation += usage.cache_creation_tokens
        running.model = usage.model or running.model
        if not config.any:
            running.used.add(cost, tokens, 0)
            return
        self._use(running, cost, tokens, 0)
        over = first_over((("perTurn", config.per_turn, running.used),), reached=False)
        if over is None:
            over = self._over_total(running)
        if over is not None:
            name, key, maximum = over
            raise StopTurnError(
                f"The turn went over budget.{name}.{key} ({maximum} for {_WHOSE[name]}); the "
                "agent was stopped."
            )

    def _over_total(self, turn: _Turn) -> tuple[str, str, str] | None:
        """The budget a turn past its own reservation has taken over its maximum (with what
        the other admitted turns hold), else None."""
        past = turn.used
        reserved = turn.reserved
        for name, limit, used, held in self._scopes(turn.principal, turn.context_id):
            total = used.plus(held)
            cost_cap, token_cap = limit.max_cost_usd, limit.max_tokens
            if (
                cost_cap is not None
                and past.cost_usd > reserved.cost_usd + _EPSILON
                and total.cost_usd > cost_cap + _EPSILON
            ):
                return name, "maxCostUsd", shown("maxCostUsd", limit)
            if token_cap is not None and past.tokens > reserved.tokens and total.tokens > token_cap:
                return name, "maxTokens", shown("maxTokens", limit)
        return None

    async def release(self, turn: Turn) -> None:
        """Keep the usage row (unless `finish` did), give back what the turn still holds and
        let its usage inform the next estimates."""
        await self._record(turn)
        key = (turn.principal, turn.context_id)
        admitted = self._admitted.get(turn.task_id)
        if self._running.get(key) is admitted:
            del self._running[key]
        if admitted is not None and self._config.any:
            self._recent.append((admitted.used.cost_usd, admitted.used.tokens))
        self.unreserve(turn.task_id)

    async def _record(self, turn: Turn) -> None:
        """Keep the turn's usage row, once."""
        running = self._admitted.get(turn.task_id) or self._running.get(
            (turn.principal, turn.context_id)
        )
        if running is None or running.recorded:
            return
        running.recorded = True
        if not (running.used.tokens or running.used.cost_usd or self._config.any):
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
            cost_usd=running.used.cost_usd,
            model=running.model,
        )
        try:
            await self._store.add(row)
        except Exception:
            log.exception("usage.not_recorded", task_id=turn.task_id)


def _none_left(scopes: tuple[tuple[str, Limit, Tally, Tally], ...]) -> tuple[str, str, str] | None:
    """The first cost or token budget held in full (nothing left for another turn)."""
    for name, limit, used, held in scopes:
        if (
            limit.max_cost_usd is not None
            and used.cost_usd + held.cost_usd >= limit.max_cost_usd - _EPSILON
        ):
            return name, "maxCostUsd", shown("maxCostUsd", limit)
        if limit.max_tokens is not None and used.tokens + held.tokens >= limit.max_tokens:
            return name, "maxTokens", shown("maxTokens", limit)
    return None
