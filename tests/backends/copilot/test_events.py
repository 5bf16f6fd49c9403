"""The pure event mapping, on session events recorded from the real CLI (fixtures/, written by
record_fixtures.py)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

import pytest
from copilot.session_events import (
    AssistantMessageData,
    AssistantMessageDeltaData,
    SessionErrorData,
    SessionEvent,
    session_event_from_dict,
)
from structlog.testing import capture_logs

from core.backend import (
    BackendEvent,
    Failed,
    FileChange,
    Progress,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from tests.support.errors import SECRET, assert_logged_safely
from wrappers.copilot.events import MESSAGE_SEPARATOR, TurnState, describe_error, map_events

FIXTURES = Path(__file__).parent / "fixtures"
PROJECT = "/srv/a2a-project"
RECORDED = sorted(p.stem for p in FIXTURES.glob("*.jsonl"))
E = TypeVar("E")


def recorded(name: str) -> list[SessionEvent]:
    lines = (FIXTURES / f"{name}.jsonl").read_text().splitlines()
    return [session_event_from_dict(json.loads(line)) for line in lines]


def fold(name: str) -> tuple[TurnState, tuple[BackendEvent, ...]]:
    return map_events(recorded(name))


def text_of(events: tuple[BackendEvent, ...]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def of_type(events: tuple[BackendEvent, ...], kind: type[E]) -> list[E]:
    return [e for e in events if isinstance(e, kind)]


def test_a_streamed_reply_is_emitted_once_as_its_deltas() -> None:
    raw = recorded("text_turn")
    state, events = map_events(raw)

    deltas = [e.data for e in raw if isinstance(e.data, AssistantMessageDeltaData)]
    assert [e.text for e in of_type(events, TextDelta)] == [d.delta_content for d in deltas]
    assert text_of(events) == "Noted. The secret word is BANANA."
    # The full message that follows the deltas is not sent again.
    assert not of_type(events, Text)
    assert state.finished and not state.aborted


def test_a_non_streaming_reply_is_emitted_once_from_the_message() -> None:
    raw = recorded("nonstreaming_turn")
    state, events = map_events(raw)

    (message,) = [e.data for e in raw if isinstance(e.data, AssistantMessageData)]
    assert of_type(events, TextDelta) == [TextDelta(message.content)]
    assert message.content.startswith("MOCK REPLY:")
    assert state.finished


def test_usage_is_the_running_total_with_the_model_and_no_dollar_cost() -> None:
    _, events = fold("tool_shell")  # two model calls: the tool call, then the answer

    totals = of_type(events, Usage)
    assert len(totals) == 2
    first, last = totals
    assert last.input_tokens > first.input_tokens > 0
    assert last.output_tokens > first.output_tokens > 0
    assert last.model == "mock-model"
    assert last.cost_usd is None


def test_a_shell_tool_becomes_a_call_and_a_result_then_the_answer() -> None:
    _, events = fold("tool_shell")

    (call,) = of_type(events, ToolCall)
    (result,) = of_type(events, ToolResult)
    assert call.name == "bash"
    assert call.input == {"command": "echo hi > made.txt"}
    assert result.call_id == call.call_id and not result.is_error
    assert "exit code 0" in result.output
    assert text_of(events).startswith("TOOL RESULT SEEN:")
    kinds = [type(e) for e in events if not isinstance(e, TextDelta | Usage)]
    assert kinds == [ToolCall, ToolResult]


@pytest.mark.parametrize(
    ("name", "change"),
    [
        ("tool_create", FileChange(f"{PROJECT}/new.txt", "add")),
        ("tool_edit", FileChange(f"{PROJECT}/notes.txt", "modify")),
    ],
)
def test_files_a_tool_committed_become_file_changes(name: str, change: FileChange) -> None:
    _, events = fold(name)

    assert of_type(events, FileChange) == [change]


def test_a_refused_tool_is_an_error_result_and_no_file_change() -> None:
    _, events = fold("tool_refused")

    (result,) = of_type(events, ToolResult)
    assert result.is_error
    assert "rejected this tool call" in result.output
    assert not of_type(events, FileChange)
    assert not of_type(events, Failed)


def test_an_aborted_turn_ends_failed_after_what_was_streamed() -> None:
    state, events = fold("aborted")

    assert state.finished and state.aborted
    assert text_of(events) == "Thinking "
    assert events[-1] == Failed("error", "The Copilot session aborted the turn.")


def test_an_auth_error_fails_once_at_the_end_and_names_the_key() -> None:
    state, events = fold("error_401")

    failures = of_type(events, Failed)
    assert failures == [events[-1]]
    assert "rejected the credentials (HTTP 401)" in failures[0].message
    assert "copilot.provider.apiKey" in failures[0].message
    # Copilot retries an auth error twice; each retry is a progress note.
    assert len(of_type(events, Progress)) == 2
    assert state.finished


def test_a_server_error_fails_after_the_retries() -> None:
    with capture_logs() as logs:
        _, events = fold("error_500")

    assert len(of_type(events, Progress)) == 5
    failure = events[-1]
    assert isinstance(failure, Failed)
    assert failure.message.startswith("The model endpoint failed (HTTP 500).")
    # Copilot's own words are in the log, under the message's error id.
    assert_logged_safely(failure.message, logs, secret="retried 5 times")


def test_a_bad_request_fails_with_the_status() -> None:
    _, events = fold("error_400")

    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.message.startswith("The model endpoint refused the request (HTTP 400). The")


@pytest.mark.parametrize("name", RECORDED)
def test_every_recorded_turn_ends_at_its_root_idle(name: str) -> None:
    raw = recorded(name)
    last_idle = max(i for i, e in enumerate(raw) if e.type.value == "session.idle")

    state, _ = map_events(raw[:last_idle])
    assert not state.finished
    state, _ = map_events(raw[: last_idle + 1])
    assert state.finished
    # Nothing after the end counts.
    _, after = map_events(recorded("text_turn"), state)
    assert after == ()


def test_sub_agent_events_are_not_the_answer_and_do_not_end_the_turn() -> None:
    raw = [replace(e, agent_id="sub-agent-1") for e in recorded("text_turn")]

    state, events = map_events(raw)

    assert events == ()
    assert not state.finished


def test_two_messages_with_text_in_one_turn_are_joined_by_a_blank_line() -> None:
    raw = recorded("text_turn")
    deltas = [e for e in raw if isinstance(e.data, AssistantMessageDeltaData)]
    second = [
        replace(e, data=replace(e.data, message_id="second-message"))
        for e in deltas
        if isinstance(e.data, AssistantMessageDeltaData)
    ]

    _, events = map_events([*deltas, *second])

    reply = "Noted. The secret word is BANANA."
    assert text_of(events) == reply + MESSAGE_SEPARATOR + reply


def error(status: int | None, message: str, error_type: str = "query") -> SessionErrorData:
    return SessionErrorData(error_type=error_type, message=message, status_code=status)


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (error(429, "slow down"), "rate limit or quota was hit (HTTP 429)"),
        (error(None, "prompt too long for the context window"), "context window"),
        (error(None, "quota exhausted", "quota"), "rate limit or quota"),
        (error(None, "something odd"), "The Copilot agent failed."),
        (error(403, "forbidden", "authentication"), "rejected the credentials (HTTP 403)"),
    ],
)
def test_errors_become_messages_a_caller_can_act_on(data: SessionErrorData, expected: str) -> None:
    assert expected in describe_error(data)


def test_an_error_message_never_carries_the_stack() -> None:
    data = replace(error(500, "boom"), stack="Error: boom\n    at secret (/app/x.js:1:1)")

    assert "secret" not in describe_error(data)


@pytest.mark.parametrize("status", [401, 500, None])
def test_copilot_s_words_reach_the_log_not_the_caller(status: int | None) -> None:
    raw = [e for e in recorded("error_400") if not isinstance(e.data, SessionErrorData)]
    failing = replace(
        next(e for e in recorded("error_400") if isinstance(e.data, SessionErrorData)),
        data=error(status, f"upstream body: {SECRET}"),
    )
    idle = [i for i, e in enumerate(raw) if e.type.value == "session.idle"][-1]
    with capture_logs() as logs:
        _, events = map_events([*raw[:idle], failing, *raw[idle:]])

    failed = events[-1]
    assert isinstance(failed, Failed)
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == "copilot.turn.failed"
