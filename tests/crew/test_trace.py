"""Trace: every A2A call of a job carries the job's W3C trace context; a daemon with tracing
on continues it (its request and turn spans are in the job's trace), and the report names
the trace id. A re-run of the job stays in the same trace."""

from __future__ import annotations

from aiohttp.test_utils import TestServer
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from core.daemon import create_app
from core.storage.memory import InMemoryTaskStore
from examples.crew.agents.client import trace_id_of
from examples.crew.show.events import NobodyAsker, PresetAnswers
from tests.conftest import make_settings
from tests.crew.agents import CrewBackend
from tests.crew.conftest import MakeServer, RunCrew, plan_of
from tests.support.polling import until
from tests.support.spans import memory_provider


async def test_every_call_of_a_job_is_in_its_trace_and_the_report_names_it(
    aiohttp_server: MakeServer, crew: RunCrew
) -> None:
    exporter = InMemorySpanExporter()
    app = create_app(
        make_settings(tracing={"enabled": True}),
        backend=CrewBackend(),
        store=InMemoryTaskStore(),
        tracer_provider=memory_provider(exporter),
    )
    server: TestServer = await aiohttp_server(app)
    url = str(server.make_url("")).rstrip("/")
    plan = plan_of({"a": url}, [{"id": "ask", "agent": "a", "prompt": "ask: which name?"}])
    first = await crew(plan)
    assert first.outcome.state == "needs-input"
    again = await crew(plan, None, asker=PresetAnswers({"ask": "slugify"}, NobodyAsker()))
    assert again.outcome.state == "done", again.report
    trace_id = trace_id_of("job-1")
    assert f"Trace id `{trace_id}`" in again.report

    async def turns() -> list[ReadableSpan]:  # a turn's span ends just after its task does
        return [s for s in exporter.get_finished_spans() if s.name.startswith("invoke_agent")]

    assert len(await until(turns, lambda found: len(found) == 2)) == 2  # question, answer
    spans = exporter.get_finished_spans()
    assert {"SendStreamingMessage", "GetTask"} <= {s.name for s in spans}
    assert {format(s.context.trace_id, "032x") for s in spans} == {trace_id}
    exporter.shutdown()
