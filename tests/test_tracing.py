"""Traces with an in-memory span exporter on the real app: a request carrying a W3C
`traceparent` produces spans in that trace with the A2A attributes, its turn an
`invoke_agent` span with the GenAI ones, a tool call an `execute_tool` span; a traceparent in
the message's metadata continues that trace."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.conftest import MakeClient, make_settings
from tests.support.spans import finished, memory_provider
from tests.support.wire import V1, call, user_message

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    spans = InMemorySpanExporter()
    yield spans
    spans.shutdown()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> TracerProvider:
    return memory_provider(exporter)


async def test_a_request_with_a_traceparent_continues_its_trace(
    make_client: MakeClient, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = await make_client(make_settings(tracing={"enabled": True}), tracer_provider=provider)

    body = await call(
        client,
        "SendMessage",
        {"message": user_message("tool: grep", contextId="ctx-traced")},
        headers={**V1, "traceparent": TRACEPARENT},
    )

    task = body["result"]["task"]
    request = await finished(exporter, "SendMessage")
    turn = await finished(exporter, "invoke_agent Test agent")
    tool = await finished(exporter, "execute_tool grep")
    assert {format(s.context.trace_id, "032x") for s in (request, turn, tool)} == {TRACE_ID}
    assert request.parent is not None
    assert format(request.parent.span_id, "016x") == PARENT_ID
    assert request.attributes is not None
    assert dict(request.attributes) == {
        "a2a.binding": "jsonrpc",
        "a2a.method.name": "SendMessage",
        "a2a.protocol.version": "1.0",
        "a2a.task.id": task["id"],
        "a2a.task.state": "TASK_STATE_COMPLETED",
        "gen_ai.conversation.id": "ctx-traced",
    }
    assert turn.parent is not None
    assert turn.parent.span_id == request.context.span_id
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.agent.name"] == "Test agent"
    assert turn.attributes["gen_ai.conversation.id"] == "ctx-traced"
    assert turn.attributes["a2a.task.state"] == "TASK_STATE_COMPLETED"
    assert tool.parent is not None
    assert tool.parent.span_id == turn.context.span_id
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["gen_ai.tool.name"] == "grep"


async def test_usage_is_on_the_turn_span(
    make_client: MakeClient, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = await make_client(make_settings(tracing={"enabled": True}), tracer_provider=provider)

    await call(client, "SendMessage", {"message": user_message("metered: a|b")})

    turn = await finished(exporter, "invoke_agent Test agent")
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.usage.input_tokens"] == 10
    assert turn.attributes["gen_ai.usage.output_tokens"] == 2
    assert turn.attributes["gen_ai.response.model"] == "scripted-1"


async def test_a_traceparent_in_the_message_metadata_continues_that_trace(
    make_client: MakeClient, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = await make_client(make_settings(tracing={"enabled": True}), tracer_provider=provider)

    message = user_message("echo: hi", metadata={"traceparent": TRACEPARENT})
    await call(client, "SendMessage", {"message": message})

    request = await finished(exporter, "SendMessage")
    turn = await finished(exporter, "invoke_agent Test agent")
    assert format(turn.context.trace_id, "032x") == TRACE_ID
    assert turn.parent is not None
    assert format(turn.parent.span_id, "016x") == PARENT_ID
    assert [link.context.span_id for link in turn.links] == [request.context.span_id]


async def test_errors_mark_the_request_span(
    make_client: MakeClient, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    client = await make_client(make_settings(tracing={"enabled": True}), tracer_provider=provider)

    await call(client, "GetTask", {"id": "no-such-task"})

    request = await finished(exporter, "GetTask")
    assert request.attributes is not None
    assert request.attributes["a2a.task.id"] == "no-such-task"
    assert request.attributes["error.type"] == "TaskNotFoundError"
