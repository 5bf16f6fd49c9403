"""The daemon's usage accounting and budgets (opened before the task service, so its totals are
read from the store before the first message is admitted, and closed after it), and what
watches the daemon: metrics and traces, built from the settings."""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass

from aiohttp import web
from aiohttp.typedefs import Middleware
from opentelemetry.sdk.trace import TracerProvider

from core.backend import Backend
from core.engine.observer import NO_OBSERVER, Observers, TurnObserver
from core.settings import Settings
from core.settings.usage import budget_config
from core.storage.usage import UsageStore
from core.usage.budgets import Budgets
from core.usage.metrics import METRICS_PATH, Metrics
from core.usage.observe import RequestSink, observe_requests
from core.usage.tracing import Tracing, default_provider


def build_budgets(settings: Settings, store: UsageStore) -> Budgets:
    return Budgets(budget_config(settings.budget), store)


@dataclass(frozen=True)
class AppObservers:
    """What watches the app: request middlewares, the engine's turn observer, the push
    outcome callback and the routes they serve (`/metrics`)."""

    metrics: Metrics | None
    tracing: Tracing | None
    owns_provider: bool
    middlewares: tuple[Middleware, ...]
    turns: TurnObserver
    settings: Settings

    def push_outcome(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.push_outcome(outcome)

    def add_routes(self, app: web.Application) -> None:
        if self.metrics is not None:
            app.router.add_get(METRICS_PATH, self.metrics.handler(self.settings))
        if self.tracing is not None and self.owns_provider:
            app.on_cleanup.append(self._flush_spans)

    async def _flush_spans(self, app: web.Application) -> None:
        """The spans still batched go out before the daemon exits."""
        if self.tracing is not None:
            self.tracing.provider.shutdown()


def observed_paths(settings: Settings) -> frozenset[str]:
    """Paths that skip the bearer check (they check access themselves)."""
    return frozenset({METRICS_PATH}) if settings.metrics.enabled else frozenset()


def build_observers(
    settings: Settings, backend: Backend, tracer_provider: TracerProvider | None = None
) -> AppObservers:
    """Metrics (`metrics.enabled`) and traces (`tracing.enabled`; `tracer_provider` replaces
    the OTLP one, for tests)."""
    sinks: list[RequestSink] = []
    turns: list[TurnObserver] = []
    metrics = None
    if settings.metrics.enabled:
        metrics = Metrics(backend.name, _version())
        warm = getattr(backend, "warm_sessions", None)
        if callable(warm):
            metrics.warm.set_function(lambda: float(warm()))
        sinks.append(metrics)
        turns.append(metrics)
    tracing = None
    if settings.tracing.enabled:
        model = getattr(settings.backend_block(), "model", None)
        tracing = Tracing(
            tracer_provider or default_provider(),
            agent=settings.agent_card.name,
            backend=backend.name,
            model=model if isinstance(model, str) else None,
            model_provider=getattr(backend, "model_provider", None),
        )
        sinks.append(tracing)
        turns.append(tracing)
    middlewares = (observe_requests(sinks),) if sinks else ()
    observer: TurnObserver = NO_OBSERVER
    if len(turns) == 1:
        observer = turns[0]
    elif turns:
        observer = Observers(turns)
    return AppObservers(metrics, tracing, tracer_provider is None, middlewares, observer, settings)


def _version() -> str:
    try:
        return importlib.metadata.version("a2a-wrapper")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
