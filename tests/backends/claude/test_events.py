"""The pure mapping from Claude Code's messages to BackendEvents, on turns recorded from the real
CLI (tests/backends/claude/recordings, made by record.py)."""

from __future__ import annotations

from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ResultMessage, StreamEvent, TextBlock
from structlog.testing import capture_logs

from core.backend import (
    Failed,
    FileChange,
    Reasoning,
    SessionBound,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from tests.backends.claude.recorded import frames, messages, replay, result_of, text_of
from tests.support.errors import SECRET, assert_logged_safely
from wrappers.claude.events import TurnState, failure_message, map_message

ALL = [
    "text_turn",
    "follow_up_turn",
    "tool_turn",
    "write_turn",
    "edit_turn",
    "thinking_turn",
    "api_error_500",
    "api_error_401",
    "api_error_529",
    "interrupted_turn",
    "after_interrupt_turn",
    "resumed_turn",
    "max_turns",
    "unstreamed_turn",
]


def session_id_of(name: str) -> str:
    return str(next(f["session_id"] for f in frames(name) if f.get("subtype") == "init"))


@pytest.mark.parametrize("name", ALL)
def test_every_turn_binds_its_session_first_and_reports_usage_last(name: str) -> None:
    state, events = replay(messages(name))
    assert events[0] == SessionBound(session_id_of(name))
    assert sum(isinstance(e, SessionBound) for e in events) == 1
    assert state.finished
    usage = [e for e in events if isinstance(e, Usage)]
    assert len(usage) == 1
    assert not any(isinstance(e, Text) for e in events), "text goes out as deltas only"


@pytest.mark.parametrize(
    "name", ["text_turn", "follow_up_turn", "after_interrupt_turn", "resumed_turn"]
)
def test_answer_text_streams_once_and_equals_the_result(name: str) -> None:
    _, events = replay(messages(name))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 1, "the recorded reply streamed in several deltas"
    assert text_of(events) == result_of(name).result


def test_a_reply_that_did_not_stream_is_sent_once_whole() -> None:
    _, events = replay(messages("unstreamed_turn"))
    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert deltas == [TextDelta(result_of("unstreamed_turn").result or "")]


def test_usage_counts_this_turn_and_its_cost_is_the_difference_of_session_totals() -> None:
    first = result_of("text_turn")
    _, events = replay(messages("text_turn"))
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.model == "claude-opus-5-5"
    assert usage.input_tokens == (first.usage or {})["input_tokens"] > 0
    assert usage.output_tokens == (first.usage or {})["output_tokens"] > 0
    assert usage.cost_usd == pytest.approx(first.total_cost_usd)

    second = result_of("follow_up_turn")
    _, events = replay(messages("follow_up_turn"), TurnState(cost_before=first.total_cost_usd))
    usage = next(e for e in events if isinstance(e, Usage))
    assert second.total_cost_usd is not None and first.total_cost_usd is not None
    assert usage.cost_usd == pytest.approx(second.total_cost_usd - first.total_cost_usd)
    assert usage.cost_usd is not None
    assert 0 < usage.cost_usd < second.total_cost_usd


def test_a_resumed_session_without_a_known_earlier_total_has_no_turn_cost() -> None:
    # The CLI restores the session's running total on resume: the difference is unknowable.
    state, events = replay(messages("resumed_turn"), TurnState(cost_before=None))
    usage = next(e for e in events if isinstance(e, Usage))
    assert usage.cost_usd is None
    assert usage.input_tokens > 0
    assert state.cost_total == result_of("resumed_turn").total_cost_usd


def test_a_tool_turn_shows_the_call_and_its_result_between_the_texts() -> None:
    _, events = replay(messages("tool_turn"))
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "SessionBound",
        "TextDelta",
        "ToolCall",
        "ToolResult",
        "TextDelta",
        "Usage",
    ]
    call = next(e for e in events if isinstance(e, ToolCall))
    assert call.name == "Bash"
    assert call.input["command"] == "echo hello-from-tool"
    assert next(e for e in events if isinstance(e, ToolResult)) == ToolResult(
        call.call_id, "hello-from-tool", is_error=False
    )
    assert text_of(events) == "Running a command.\n\nMOCK saw tool result: hello-from-tool"


@pytest.mark.parametrize(("name", "kind"), [("write_turn", "add"), ("edit_turn", "modify")])
def test_file_tools_that_succeed_are_file_changes(name: str, kind: str) -> None:
    _, events = replay(messages(name))
    call = next(e for e in events if isinstance(e, ToolCall))
    changes = [e for e in events if isinstance(e, FileChange)]
    assert changes == [FileChange(path=call.input["file_path"], kind=kind)]  # type: ignore[arg-type]
    assert changes[0].path.endswith("/notes.txt")


def test_thinking_is_reasoning_not_answer() -> None:
    _, events = replay(messages("thinking_turn"))
    assert [e for e in events if isinstance(e, Reasoning)] == [Reasoning("Let me think about it.")]
    assert text_of(events) == "Thought it through."


@pytest.mark.parametrize(
    ("name", "expected", "kind"),
    [
        ("api_error_500", "The model endpoint failed (HTTP 500)", "upstream"),
        ("api_error_401", "rejected the credentials (HTTP 401): set ANTHROPIC_API_KEY", "auth"),
        ("api_error_529", "overloaded (HTTP 529)", "upstream"),
    ],
)
def test_api_errors_fail_the_turn_with_an_actionable_message(
    name: str, expected: str, kind: str
) -> None:
    _, events = replay(messages(name))
    assert text_of(events) == "", "the CLI's synthetic error text is not an answer"
    failed = [e for e in events if isinstance(e, Failed)]
    assert len(failed) == 1
    assert failed[0].kind == kind
    assert expected in failed[0].message
    assert "Traceback" not in failed[0].message
    assert isinstance(events[-1], Failed), "the failure is the turn's last event"


def test_an_interrupted_turn_ends_as_interrupted() -> None:
    _, events = replay(messages("interrupted_turn"))
    assert text_of(events) == ""
    assert events[-1] == Failed("error", "The turn was interrupted before it finished.")


def test_max_turns_stops_with_advice() -> None:
    _, events = replay(messages("max_turns"))
    assert any(isinstance(e, ToolCall) for e in events)
    failed = events[-1]
    assert isinstance(failed, Failed)
    assert "claude.maxTurns" in failed.message


def _result(**fields: Any) -> ResultMessage:
    base: dict[str, Any] = {
        "subtype": "success",
        "duration_ms": 1,
        "duration_api_ms": 1,
        "is_error": True,
        "num_turns": 1,
        "session_id": "s",
    }
    return ResultMessage(**{**base, **fields})


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"api_error_status": 429, "result": "API Error: 429"}, "quota was reached (HTTP 429)"),
        ({"api_error_status": 403, "result": "API Error: 403"}, "refused access (HTTP 403)"),
        (
            {"api_error_status": 400, "result": "API Error: 400 prompt is too long: 1 > 0"},
            "no longer fits in the model's context window",
        ),
        (
            {"result": "Not logged in · Please run /login"},
            "no credentials for the model endpoint: set ANTHROPIC_API_KEY",
        ),
        ({"subtype": "error_max_budget_usd", "errors": ["budget"]}, "claude.maxBudgetUsd"),
        (
            {"subtype": "error_during_execution", "errors": ["boom"]},
            "Claude Code could not finish the turn.",
        ),
    ],
)
def test_failure_messages(fields: dict[str, Any], expected: str) -> None:
    assert expected in failure_message(_result(**fields))


@pytest.mark.parametrize(
    "fields",
    [
        {"api_error_status": 401, "result": f"API Error: 401 {SECRET}"},
        {"api_error_status": 500, "result": f"API Error: 500 {SECRET}"},
        {"subtype": "error_during_execution", "errors": [SECRET]},
    ],
)
def test_claude_code_s_words_reach_the_log_not_the_caller(fields: dict[str, Any]) -> None:
    with capture_logs() as logs:
        _, events = map_message(TurnState(), _result(**fields))

    failed = events[-1]
    assert isinstance(failed, Failed)
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == "claude.turn.failed"


def test_a_limit_reached_is_said_as_it_is() -> None:
    _, events = map_message(TurnState(), _result(subtype="error_max_turns"))

    assert events[-1] == Failed("error", failure_message(_result(subtype="error_max_turns")))


def test_subagent_traffic_is_not_the_answer() -> None:
    delta = {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "text_delta", "text": "x"},
    }
    sub_stream = StreamEvent(uuid="u", session_id="s", event=delta, parent_tool_use_id="toolu_1")
    sub_text = AssistantMessage(content=[TextBlock("x")], model="m", parent_tool_use_id="toolu_1")
    state = TurnState()
    for message in (sub_stream, sub_text):
        assert map_message(state, message) == (state, [])
