"""Spans in tests: a TracerProvider exporting to memory, and waiting for a span to end (a
turn's span ends as the turn does, just after a blocking send returned)."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.support.polling import until


def memory_provider(exporter: InMemorySpanExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


async def finished(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    """The one finished span called `name`, once it has ended."""

    async def look() -> list[ReadableSpan]:
        return [s for s in exporter.get_finished_spans() if s.name == name]

    found = await until(look, bool)
    names = [s.name for s in exporter.get_finished_spans()]
    assert len(found) == 1, names
    return found[0]
