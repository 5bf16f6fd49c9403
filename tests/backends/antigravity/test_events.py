"""The step mapping on recordings of what the real SDK (google-antigravity 0.1.22, its
localharness) streamed against the chat completions mock (`record.py` made them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from google.antigravity import types

from core.backend import (
    BackendEvent,
    Failed,
    FileChange,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from wrappers.antigravity.events import StepMapper

RECORDINGS = Path(__file__).resolve().parent / "recordings"


def steps(name: str) -> list[Any]:
    raw = json.loads((RECORDINGS / f"{name}.json").read_text())
    return [types.Step.model_validate(step) for step in raw]


def mapped(name: str) -> list[BackendEvent]:
    mapper = StepMapper(model="mock-model")
    return [event for step in steps(name) for event in mapper.feed(step)]


def text(events: list[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_a_text_reply_streams_as_deltas_that_add_up_to_the_final_content() -> None:
    events = mapped("text_turn")

    final = [s for s in steps("text_turn") if s.is_complete_response][-1]
    assert all(isinstance(e, TextDelta) for e in events)
    assert len(events) >= 2, "the reply arrives in pieces"
    assert text(events) == final.content


def test_the_users_own_step_is_not_echoed() -> None:
    assert "Say hello." not in text(mapped("text_turn"))


def test_a_command_is_one_call_then_one_result_with_its_output() -> None:
    events = mapped("command_turn")

    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(c.name, c.input["command_line"]) for c in calls] == [("run_command", "echo ran-it")]
    assert len(results) == 1
    assert results[0].call_id == calls[0].call_id
    assert results[0].output.strip() == "ran-it"
    assert not results[0].is_error
    assert events.index(calls[0]) < events.index(results[0])
    assert "TOOL RESULT SEEN" in text(events[events.index(results[0]) :])


def test_a_command_that_exits_non_zero_is_a_failed_result() -> None:
    results = [e for e in mapped("failed_command_turn") if isinstance(e, ToolResult)]

    assert [r.is_error for r in results] == [True]


def test_a_file_write_is_a_call_a_result_and_a_file_change() -> None:
    events = mapped("write_turn")

    changes = [e for e in events if isinstance(e, FileChange)]
    assert changes == [FileChange("/work/work/notes.txt", "modify")]
    result = next(e for e in events if isinstance(e, ToolResult))
    assert events.index(result) < events.index(changes[0])


def test_an_invalid_tool_call_the_agent_recovers_from_is_no_failure() -> None:
    mapper = StepMapper()
    for step in steps("invalid_call_turn"):
        mapper.feed(step)

    assert mapper.finish(None, None) == []


def test_a_model_error_not_recovered_from_fails_the_turn_without_its_text() -> None:
    mapper = StepMapper()
    error = next(s for s in steps("invalid_call_turn") if s.status == types.StepStatus.ERROR)
    mapper.feed(error)

    (failure,) = mapper.finish(None, None)

    assert isinstance(failure, Failed)
    assert failure.message.startswith("The model endpoint failed the turn.")
    assert "invalid tool call" not in failure.message
    assert "error id" in failure.message


@pytest.mark.parametrize(
    ("error", "sentence"),
    [
        (types.AntigravityConnectionError("401 key sk-secret"), "The model endpoint refused"),
        (types.AntigravityExecutionError("boom sk-secret"), "The Antigravity agent failed"),
    ],
)
def test_an_sdk_error_is_a_safe_failure(error: Exception, sentence: str) -> None:
    (failure,) = StepMapper().finish(error, None)

    assert isinstance(failure, Failed)
    assert failure.message.startswith(sentence)
    assert "sk-secret" not in failure.message


def test_usage_is_reported_once_at_the_end() -> None:
    usage = types.UsageMetadata(
        prompt_token_count=1074, candidates_token_count=16, total_token_count=1090
    )

    assert StepMapper(model="m").finish(None, usage) == [Usage(1074, 16, model="m")]
    assert StepMapper().finish(None, types.UsageMetadata()) == []


def test_the_text_of_two_replies_in_one_turn_is_two_paragraphs() -> None:
    mapper = StepMapper()
    events = [
        e for name in ("text_turn", "command_turn") for s in steps(name) for e in mapper.feed(s)
    ]

    first = [s for s in steps("text_turn") if s.is_complete_response][-1].content
    second = [s for s in steps("command_turn") if s.is_complete_response][-1].content
    assert text(events) == f"{first}\n\n{second}"
