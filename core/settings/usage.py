"""The usage blocks of the Settings model: budgets (`budget`), the Prometheus endpoint
(`metrics`) and tracing (`tracing`), and `budget_config`, which turns `budget` into the
engine's frozen `BudgetConfig`."""

from __future__ import annotations

from pydantic import Field

from core.backend.config import Block
from core.usage.budget_tally import Limit
from core.usage.budgets import BudgetConfig


class TurnBudgetSettings(Block):
    max_cost_usd: float | None = Field(
        default=None, gt=0, description="USD one turn may cost; the turn is stopped past it"
    )
    max_tokens: int | None = Field(
        default=None, gt=0, description="Tokens (input + output) one turn may use"
    )

    def limit(self) -> Limit:
        return Limit(self.max_cost_usd, self.max_tokens)


class ContextBudgetSettings(TurnBudgetSettings):
    max_turns: int | None = Field(default=None, gt=0, description="Turns that may start")

    def limit(self) -> Limit:
        return Limit(self.max_cost_usd, self.max_tokens, self.max_turns)


class PrincipalBudgetSettings(ContextBudgetSettings):
    window: int = Field(
        default=24 * 3600 * 1000,
        ge=0,
        description="ms the per-principal budget looks back (rolling); 0 = all time",
    )


class BudgetSettings(Block):
    per_turn: TurnBudgetSettings = Field(
        default_factory=TurnBudgetSettings, description="What one turn may spend"
    )
    per_context: ContextBudgetSettings = Field(
        default_factory=ContextBudgetSettings, description="What one context may spend in all"
    )
    per_principal: PrincipalBudgetSettings = Field(
        default_factory=PrincipalBudgetSettings,
        description="What one caller (principal) may spend within the window",
    )

    def summary(self) -> str:
        """The configured maxima in one line (what `check` shows), or "none"."""
        shown = []
        for name, block in (
            ("perTurn", self.per_turn),
            ("perContext", self.per_context),
            ("perPrincipal", self.per_principal),
        ):
            keys = block.model_dump(by_alias=True, exclude_none=True, exclude={"window"})
            if keys:
                inner = ", ".join(f"{key} {value:g}" for key, value in keys.items())
                window = self.per_principal.window
                if name == "perPrincipal":
                    inner += f" per {window / 1000:g} s" if window else " in all"
                shown.append(f"{name}: {inner}")
        return "; ".join(shown) or "none"


class MetricsSettings(Block):
    enabled: bool = Field(default=True, description="Serve Prometheus metrics at /metrics")
    token: str | None = Field(
        default=None,
        description="Bearer token /metrics asks for; without one, /metrics answers loopback "
        "callers only",
    )


class TracingSettings(Block):
    enabled: bool = Field(
        default=False,
        description="OpenTelemetry traces: a span per A2A request and per turn, exported by "
        "OTLP as the standard OTEL_* environment says",
    )


def budget_config(budget: BudgetSettings) -> BudgetConfig:
    window = budget.per_principal.window
    return BudgetConfig(
        per_turn=budget.per_turn.limit(),
        per_context=budget.per_context.limit(),
        per_principal=budget.per_principal.limit(),
        window=window / 1000 if window else None,
    )
