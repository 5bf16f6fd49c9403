"""What a request was, for metrics and traces: its A2A method, protocol version, binding,
outcome and task, gathered while the bindings handle it.

`observing` makes one `RequestFacts` per A2A request (in a context variable, so the bindings
and the engine's `admitted` call, made in the request, fill it in) and hands it to each sink
(metrics, tracing) when the request ends, a stream included. The HTTP binding runs it as a
middleware (core/bindings/http/observe.py).
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from core.wire.errors import DaemonError, protocol_name

if TYPE_CHECKING:
    from core.engine.task_run import TaskRun

# The `method` of a request whose name the daemon does not know: a caller's made-up name never
# becomes a label value (each would be a series of its own, kept for the process's life).
OTHER = "other"


@dataclass
class RequestFacts:
    binding: str
    method: str = "unknown"
    version: str = ""
    outcome: str = "ok"
    task_id: str | None = None
    context_id: str | None = None
    run: TaskRun | None = None
    traced: bool = False  # the request carried a W3C traceparent

    @property
    def task_state(self) -> str | None:
        return self.run.task.status.state.value if self.run is not None else None


_FACTS: contextvars.ContextVar[RequestFacts | None] = contextvars.ContextVar(
    "a2a_request_facts", default=None
)


def current() -> RequestFacts | None:
    return _FACTS.get()


def method(name: str, version: str, task_id: object = None) -> None:
    """The binding knows which A2A method (and which task, if the params name one); `name` is
    one of the daemon's own method names, or `OTHER`."""
    facts = _FACTS.get()
    if facts is not None:
        facts.method, facts.version = name, version
        if isinstance(task_id, str):
            facts.task_id = task_id


def failed(error: Exception) -> None:
    """The request ended in `error` (already a DaemonError)."""
    facts = _FACTS.get()
    if facts is not None:
        facts.outcome = (
            protocol_name(error) if isinstance(error, DaemonError) else type(error).__name__
        )


def admitted(run: TaskRun) -> None:
    """The engine admitted a turn of this request."""
    facts = _FACTS.get()
    if facts is not None:
        facts.run, facts.task_id, facts.context_id = run, run.task.id, run.task.context_id


class RequestSink(Protocol):
    def request_started(self, headers: Mapping[str, str], facts: RequestFacts) -> object:
        """Called as the request begins (with its headers or metadata); what it returns is
        handed to `request_ended`."""
        ...

    def request_ended(self, facts: RequestFacts, token: object) -> None: ...


@contextmanager
def observing(
    sinks: tuple[RequestSink, ...], binding: str, headers: Mapping[str, str]
) -> Iterator[RequestFacts]:
    """One A2A request of `binding`, watched by `sinks` from here to its end."""
    facts = RequestFacts(binding)
    reset = _FACTS.set(facts)
    tokens = [sink.request_started(headers, facts) for sink in sinks]
    try:
        yield facts
    except BaseException as exc:
        facts.outcome = type(exc).__name__
        raise
    finally:
        _FACTS.reset(reset)
        for sink, token in zip(sinks, tokens, strict=True):
            sink.request_ended(facts, token)
