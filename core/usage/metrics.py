"""Prometheus metrics at `/metrics`: requests, turns, queueing, sessions, usage, push.

One `Metrics` per app, on a registry of its own (two apps in one process never share
counters). It is a request sink (core/usage/observe.py), the engine's `TurnObserver` and the
push dispatcher's `observe` callback; every update is a counter or gauge step on a labelled
child looked up once. `/metrics` (core/bindings/http/metrics.py) answers loopback callers, or
any caller with `metrics.token`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)

from core.backend import ToolCall, ToolResult, Turn, Usage
from core.engine.wrapper_section import WRAPPER_METADATA_KEY
from core.usage.observe import RequestFacts

if TYPE_CHECKING:
    from core.engine.task_run import TaskRun

METRICS_PATH = "/metrics"
# What `exposition` is served as.
CONTENT_TYPE = CONTENT_TYPE_LATEST
_TURN_BUCKETS = (0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800)
_WAIT_BUCKETS = (0.001, 0.01, 0.1, 0.5, 1, 5, 10, 30, 60, 300)


class Metrics:
    def __init__(self, backend: str, version: str) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self._backend = backend
        self.requests = Counter(
            "a2a_requests",
            "A2A requests by method, protocol version, binding and outcome (ok or the error)",
            ["method", "version", "binding", "outcome"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "a2a_request_duration_seconds",
            "Time to answer an A2A request (a stream: until it ends)",
            ["method", "binding"],
            registry=registry,
        )
        self.turns = Counter(
            "a2a_turns",
            "Turns by backend and the state they ended in",
            ["backend", "outcome"],
            registry=registry,
        )
        self.turn_seconds = Histogram(
            "a2a_turn_duration_seconds",
            "Turn duration, from its start to its end state",
            ["backend"],
            buckets=_TURN_BUCKETS,
            registry=registry,
        )
        self.first_output_seconds = Histogram(
            "a2a_turn_first_output_seconds",
            "Time from a turn's start to its first text",
            ["backend"],
            buckets=_TURN_BUCKETS,
            registry=registry,
        )
        self.in_flight = Gauge("a2a_turns_in_flight", "Turns running now", registry=registry)
        self.queued = Gauge(
            "a2a_turns_queued",
            "Turns admitted and waiting for their context or a slot",
            registry=registry,
        )
        self.queue_wait = Histogram(
            "a2a_turn_queue_wait_seconds",
            "Time a turn waited before it started",
            buckets=_WAIT_BUCKETS,
            registry=registry,
        )
        self.live_contexts = Gauge(
            "a2a_sessions_live",
            "Contexts with a turn running on their backend session now",
            registry=registry,
        )
        self.warm = Gauge(
            "a2a_sessions_warm",
            "Agent sessions the backend keeps warm (when it says)",
            registry=registry,
        )
        self.tokens = Counter(
            "a2a_tokens",
            "Tokens the agents reported, by backend and kind",
            ["backend", "kind"],
            registry=registry,
        )
        self.cost = Counter(
            "a2a_cost_usd", "Cost the agents reported (USD)", ["backend"], registry=registry
        )
        self.refusals = Counter(
            "a2a_upstream_refusals",
            "Turns the model provider refused, by backend and kind (auth, quota, rateLimit,"
            " upstream)",
            ["backend", "kind"],
            registry=registry,
        )
        self.tool_calls = Counter(
            "a2a_tool_calls", "Tool calls the agents made", ["backend"], registry=registry
        )
        self.push = Counter(
            "a2a_push_attempts",
            "Push notification attempts by outcome (delivered, retry, gave_up, refused)",
            ["outcome"],
            registry=registry,
        )
        build = Gauge(
            "a2a_build_info",
            "The daemon's version and backend",
            ["version", "backend"],
            registry=registry,
        )
        build.labels(version, backend).set(1)
        self._turn_outcomes: dict[str, Counter] = {}
        self._turn_seconds = self.turn_seconds.labels(backend)
        self._first_output = self.first_output_seconds.labels(backend)
        self._input = self.tokens.labels(backend, "input")
        self._output = self.tokens.labels(backend, "output")
        self._cache_read = self.tokens.labels(backend, "cache_read")
        self._cache_creation = self.tokens.labels(backend, "cache_creation")
        self._cost = self.cost.labels(backend)
        self._tools = self.tool_calls.labels(backend)
        # Labelled children, looked up once per label set (`labels()` takes a lock each time).
        self._request_children: dict[tuple[str, str, str, str], tuple[Counter, Histogram]] = {}
        self._admitted: dict[str, float] = {}
        self._started: dict[str, float] = {}

    # ----- requests (a RequestSink) ----------------------------------------------------------

    def request_started(self, headers: Mapping[str, str], facts: RequestFacts) -> object:
        return time.perf_counter()

    def request_ended(self, facts: RequestFacts, token: object) -> None:
        key = (facts.method, facts.version, facts.binding, facts.outcome)
        children = self._request_children.get(key)
        if children is None:
            children = self._request_children[key] = (
                self.requests.labels(*key),
                self.request_seconds.labels(facts.method, facts.binding),
            )
        count, seconds = children
        count.inc()
        if isinstance(token, float):
            seconds.observe(time.perf_counter() - token)

    # ----- turns (a TurnObserver) ------------------------------------------------------------

    def admitted(self, run: TaskRun, turn: Turn) -> None:
        self._admitted[run.task.id] = time.perf_counter()
        self.queued.inc()

    def started(self, run: TaskRun, turn: Turn) -> None:
        now = time.perf_counter()
        admitted = self._admitted.pop(run.task.id, None)
        if admitted is not None:
            self.queued.dec()
            self.queue_wait.observe(now - admitted)
        self._started[run.task.id] = now
        self.in_flight.inc()
        self.live_contexts.inc()

    def first_output(self, run: TaskRun) -> None:
        started = self._started.get(run.task.id)
        if started is not None:
            self._first_output.observe(time.perf_counter() - started)

    def tool(self, run: TaskRun, event: ToolCall | ToolResult) -> None:
        if isinstance(event, ToolCall):
            self._tools.inc()

    def usage(self, run: TaskRun, usage: Usage) -> None:
        self._input.inc(usage.input_tokens)
        self._output.inc(usage.output_tokens)
        if usage.cache_read_tokens:
            self._cache_read.inc(usage.cache_read_tokens)
        if usage.cache_creation_tokens:
            self._cache_creation.inc(usage.cache_creation_tokens)
        if usage.cost_usd:
            self._cost.inc(usage.cost_usd)

    def ended(self, run: TaskRun, *, started: bool) -> None:
        task_id = run.task.id
        if self._admitted.pop(task_id, None) is not None:
            self.queued.dec()
        began = self._started.pop(task_id, None)
        if began is not None:
            self.in_flight.dec()
            self.live_contexts.dec()
            self._turn_seconds.observe(time.perf_counter() - began)
        outcome = "direct_reply" if run.reply is not None else _outcome(run)
        counter = self._turn_outcomes.get(outcome)
        if counter is None:
            counter = self._turn_outcomes[outcome] = self.turns.labels(self._backend, outcome)
        counter.inc()
        kind = _refusal(run)
        if kind is not None:
            self.refusals.labels(self._backend, kind).inc()

    # ----- push ------------------------------------------------------------------------------

    def push_outcome(self, outcome: str) -> None:
        self.push.labels(outcome).inc()

    def exposition(self) -> bytes:
        """The registry in the Prometheus text format (`/metrics`)."""
        return generate_latest(self.registry)


def _refusal(run: TaskRun) -> str | None:
    """The kind of the provider's refusal that ended the turn (`a2aWrapper.error.kind`)."""
    section = (run.task.metadata or {}).get(WRAPPER_METADATA_KEY)
    error = section.get("error") if isinstance(section, dict) else None
    kind = error.get("kind") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None


def _outcome(run: TaskRun) -> str:
    state = run.task.status.state.value
    return state.removeprefix("TASK_STATE_").lower()
