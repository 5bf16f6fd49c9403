"""Traces of a real Claude Code turn on the mock: the caller's trace goes on through the
daemon, the turn is an `invoke_agent` span with the GenAI attributes (provider, model, usage)
and the agent's Bash call an `execute_tool` span under it."""

from __future__ import annotations

import uuid

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness.mock_models.anthropic import AnthropicMock, Reply, ToolUse
from tests.backends.claude.conftest import MODEL, ClaudeEnv, StartDaemon
from tests.support.spans import finished, memory_provider
from tests.support.wire import V1, call, user_message

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"


async def test_a_claude_turn_and_its_tool_call_are_spans_of_the_callers_trace(
    start_daemon: StartDaemon, claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    exporter = InMemorySpanExporter()
    provider = memory_provider(exporter)
    command = ToolUse("Bash", {"command": "echo traced", "description": "say it"})
    mock.on("use a tool", Reply(text="Running a command.", tool_use=command))
    client = await start_daemon(
        claude_env.settings(tracing={"enabled": True}), tracer_provider=provider
    )

    message = user_message("Please use a tool.", contextId="ctx-t", messageId=str(uuid.uuid4()))
    body = await call(
        client, "SendMessage", {"message": message}, headers={**V1, "traceparent": TRACEPARENT}
    )

    assert body["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", body
    turn = await finished(exporter, "invoke_agent Claude e2e")
    tool = await finished(exporter, "execute_tool Bash")
    spans = exporter.get_finished_spans()
    assert {format(s.context.trace_id, "032x") for s in spans} == {TRACE_ID}
    assert tool.parent is not None
    assert tool.parent.span_id == turn.context.span_id
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.provider.name"] == "anthropic"
    assert turn.attributes["gen_ai.request.model"] == MODEL
    output_tokens = turn.attributes["gen_ai.usage.output_tokens"]
    assert isinstance(output_tokens, int)
    assert output_tokens > 0
    exporter.shutdown()
