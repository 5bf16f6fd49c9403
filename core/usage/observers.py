"""What watches the daemon: metrics and traces as request sinks, turn observer and push
callback (core/daemon.py builds them from the settings)."""

from __future__ import annotations

from dataclasses import dataclass

from core.engine.observer import TurnObserver
from core.usage.metrics import Metrics
from core.usage.observe import RequestSink
from core.usage.tracing import Tracing


@dataclass(frozen=True)
class AppObservers:
    """What watches the daemon: the request sinks (the bindings feed them), the engine's turn
    observer, the push outcome callback, and the metrics the HTTP binding serves."""

    metrics: Metrics | None
    tracing: Tracing | None
    owns_provider: bool
    sinks: tuple[RequestSink, ...]
    turns: TurnObserver

    def push_outcome(self, outcome: str) -> None:
        if self.metrics is not None:
            self.metrics.push_outcome(outcome)

    def flush(self) -> None:
        """The spans still batched go out before the daemon exits (when the exporter is the
        daemon's own)."""
        if self.tracing is not None and self.owns_provider:
            self.tracing.provider.shutdown()
