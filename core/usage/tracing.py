"""OpenTelemetry traces (`tracing.enabled`): one span per A2A request, one `invoke_agent` span
per turn, an `execute_tool` span per tool call.

The request span follows the A2A semantic conventions (`a2a.method.name`, `a2a.task.id`,
`a2a.task.state`, `a2a.protocol.version`, `gen_ai.conversation.id`) and continues the caller's
trace when the request carries a W3C `traceparent` header. A turn's span is a child of the
request that admitted it; when the request has no `traceparent` but the message's metadata
does, the turn's span continues that trace instead and links to the request span. Tool spans
are children of their turn's span. Spans go to the app's own TracerProvider: OTLP over HTTP,
configured by the standard `OTEL_*` environment (endpoint, headers, service name); tests hand
in a provider with an in-memory exporter.
"""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from core.backend import ToolCall, ToolResult, Turn, Usage
from core.usage import observe
from core.usage.observe import RequestFacts

if TYPE_CHECKING:
    from core.engine.task_run import TaskRun

_PROPAGATOR = TraceContextTextMapPropagator()
_FAILED = ("TASK_STATE_FAILED", "TASK_STATE_REJECTED")


def default_provider() -> TracerProvider:
    """A provider exporting by OTLP/HTTP as `OTEL_*` says (OTEL_SERVICE_NAME included)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import (  # noqa: PLC0415 - only when tracing is on
        OTLPSpanExporter,
    )

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


@dataclass(frozen=True)
class _Started:
    span: Span
    attached: contextvars.Token[otel_context.Context]


class Tracing:
    def __init__(
        self,
        provider: TracerProvider,
        *,
        agent: str,
        backend: str,
        model: str | None,
        model_provider: str | None = None,
    ) -> None:
        """`model_provider`: gen_ai.provider.name, when the backend says whose models it runs
        (its `model_provider` attribute)."""
        self.provider = provider
        self._tracer = provider.get_tracer("a2a-wrapper")
        self._agent = agent
        self._backend = backend
        self._model = model
        self._model_provider = model_provider
        self._parents: dict[str, tuple[otel_context.Context, list[Link]]] = {}
        self._turns: dict[str, Span] = {}
        self._tools: dict[tuple[str, str], Span] = {}

    # ----- requests (a RequestSink) ----------------------------------------------------------

    def request_started(self, headers: Mapping[str, str], facts: RequestFacts) -> object:
        parent = _PROPAGATOR.extract(headers)
        span = self._tracer.start_span("a2a.request", context=parent, kind=SpanKind.SERVER)
        span.set_attribute("a2a.binding", facts.binding)
        facts.traced = trace.get_current_span(parent).get_span_context().is_valid
        return _Started(span, otel_context.attach(trace.set_span_in_context(span, parent)))

    def request_ended(self, facts: RequestFacts, token: object) -> None:
        if not isinstance(token, _Started):  # pragma: no cover - what request_started returned
            return
        span = token.span
        otel_context.detach(token.attached)
        span.update_name(facts.method)
        attributes: dict[str, Any] = {
            "a2a.method.name": facts.method,
            "a2a.protocol.version": facts.version,
        }
        if facts.task_id is not None:
            attributes["a2a.task.id"] = facts.task_id
        if facts.context_id is not None:
            attributes["gen_ai.conversation.id"] = facts.context_id
        state = facts.task_state
        if state is not None:
            attributes["a2a.task.state"] = state
        span.set_attributes(attributes)
        if facts.outcome != "ok":
            span.set_status(Status(StatusCode.ERROR, facts.outcome))
            span.set_attribute("error.type", facts.outcome)
        span.end()

    # ----- turns (a TurnObserver) ------------------------------------------------------------

    def admitted(self, run: TaskRun, turn: Turn) -> None:
        observe.admitted(run)
        current = otel_context.get_current()
        facts = observe.current()
        carried = _message_traceparent(run)
        request_span = trace.get_current_span(current)
        has_remote_parent = facts is not None and facts.traced
        if carried is not None and not has_remote_parent:
            links = [Link(request_span.get_span_context())] if request_span.is_recording() else []
            self._parents[run.task.id] = (_PROPAGATOR.extract(carried), links)
        else:
            self._parents[run.task.id] = (current, [])

    def started(self, run: TaskRun, turn: Turn) -> None:
        parent, links = self._parents.pop(run.task.id, (otel_context.Context(), []))
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": self._agent,
            "gen_ai.conversation.id": turn.context_id,
            "a2a.task.id": turn.task_id,
            "a2a.wrapper.backend": self._backend,
        }
        if self._model_provider is not None:
            attributes["gen_ai.provider.name"] = self._model_provider
        if self._model is not None:
            attributes["gen_ai.request.model"] = self._model
        self._turns[run.task.id] = self._tracer.start_span(
            f"invoke_agent {self._agent}",
            context=parent,
            kind=SpanKind.CLIENT,
            attributes=attributes,
            links=links,
        )

    def first_output(self, run: TaskRun) -> None:
        span = self._turns.get(run.task.id)
        if span is not None:
            span.add_event("gen_ai.first_output")

    def tool(self, run: TaskRun, event: ToolCall | ToolResult) -> None:
        task_id = run.task.id
        if isinstance(event, ToolCall):
            turn = self._turns.get(task_id)
            parent = trace.set_span_in_context(turn) if turn is not None else None
            self._tools[(task_id, event.call_id)] = self._tracer.start_span(
                f"execute_tool {event.name}",
                context=parent,
                kind=SpanKind.INTERNAL,
                attributes={
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": event.name,
                    "gen_ai.tool.call.id": event.call_id,
                },
            )
            return
        span = self._tools.pop((task_id, event.call_id), None)
        if span is not None:
            if event.is_error:
                span.set_status(Status(StatusCode.ERROR, "the tool call failed"))
            span.end()

    def usage(self, run: TaskRun, usage: Usage) -> None:
        span = self._turns.get(run.task.id)
        if span is None:
            return
        span.set_attribute("gen_ai.usage.input_tokens", usage.input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", usage.output_tokens)
        if usage.model:
            span.set_attribute("gen_ai.response.model", usage.model)
        if usage.cost_usd is not None:
            span.set_attribute("a2a.wrapper.cost_usd", usage.cost_usd)

    def ended(self, run: TaskRun, *, started: bool) -> None:
        task_id = run.task.id
        self._parents.pop(task_id, None)
        if self._tools:
            # A tool still running when the turn ended (stopped, say) ends with it.
            for key in [k for k in self._tools if k[0] == task_id]:
                self._tools.pop(key).end()
        span = self._turns.pop(task_id, None)
        if span is None:
            return
        state = run.task.status.state.value
        span.set_attribute("a2a.task.state", state)
        if state in _FAILED:
            span.set_status(Status(StatusCode.ERROR, state))
        span.end()


def _message_traceparent(run: TaskRun) -> dict[str, str] | None:
    """The W3C trace context in the latest message's metadata, if any."""
    history = run.task.history
    metadata = history[-1].metadata if history else None
    if not metadata:
        return None
    parent = metadata.get("traceparent")
    if not isinstance(parent, str):
        return None
    carrier = {"traceparent": parent}
    state = metadata.get("tracestate")
    if isinstance(state, str):
        carrier["tracestate"] = state
    return carrier
