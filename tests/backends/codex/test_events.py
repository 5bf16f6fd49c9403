"""The pure mapping from app-server notifications to BackendEvents, on output recorded from the
real `codex app-server` (fixtures/, written by `record_fixtures.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from core.backend import (
    BackendEvent,
    Failed,
    FileChange,
    Progress,
    Reasoning,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
    Usage,
)
from tests.support.errors import SECRET, assert_logged_safely
from wrappers.codex.events import TurnState, describe_error, map_notification

FIXTURES = Path(__file__).parent / "fixtures"
HTTP_429 = {"httpStatusCode": 429}


@dataclass
class Recorded:
    messages: list[dict[str, Any]]
    turn_id: str
    model: str | None

    @property
    def notifications(self) -> list[dict[str, Any]]:
        return [m for m in self.messages if "method" in m and "id" not in m]

    def completed_turn(self) -> dict[str, Any]:
        for message in self.notifications:
            if message["method"] == "turn/completed":
                turn: dict[str, Any] = message["params"]["turn"]
                return turn
        raise AssertionError("no turn/completed")


def load(name: str) -> Recorded:
    messages = [json.loads(line) for line in (FIXTURES / f"{name}.jsonl").read_text().splitlines()]
    results = [m["result"] for m in messages if isinstance(m.get("result"), dict)]
    turn_id = next(r["turn"]["id"] for r in results if "turn" in r)
    model = next((r["model"] for r in results if "thread" in r), None)
    return Recorded(messages, turn_id, model)


def replay(recorded: Recorded) -> tuple[TurnState, list[BackendEvent]]:
    """Fold every notification of the recording through the mapping, as the backend does."""
    state = TurnState(recorded.turn_id, recorded.model)
    events: list[BackendEvent] = []
    for message in recorded.notifications:
        state, mapped = map_notification(state, message["method"], message["params"])
        events.extend(mapped)
    return state, events


def text_of(events: list[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def final_messages(recorded: Recorded) -> list[str]:
    """The agent messages Codex itself reports in the completed turn."""
    return [
        item["text"]
        for item in recorded.completed_turn()["items"]
        if item.get("type") == "agentMessage"
    ]


def test_a_text_turn_streams_the_answer_once_then_reports_usage() -> None:
    recorded = load("text")

    state, events = replay(recorded)

    assert state.done
    assert text_of(events) == "MOCK_REPLY #1 history: user[0]='Remember the word PAPAYA.'"
    assert text_of(events) == final_messages(recorded)[-1]
    assert len([e for e in events if isinstance(e, TextDelta)]) > 1, "text arrives as deltas"
    assert not [e for e in events if isinstance(e, Text)], "never the whole text again"
    assert events[-1] == Usage(input_tokens=100, output_tokens=10, model="gpt-5.5")


def test_a_shell_tool_becomes_a_call_and_its_result_before_the_answer() -> None:
    _, events = replay(load("shell_tool"))

    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert len(calls) == len(results) == 1
    assert calls[0].name == "shell"
    assert "echo hello-from-tool" in calls[0].input["command"]
    assert results[0].call_id == calls[0].call_id
    assert "hello-from-tool" in results[0].output
    assert not results[0].is_error
    assert events.index(results[0]) < events.index(
        next(e for e in events if isinstance(e, TextDelta))
    )
    assert text_of(events).startswith("MOCK saw tool output:")
    # Two model requests in this turn: the usage is theirs, summed.
    assert events[-1] == Usage(input_tokens=200, output_tokens=20, model=None)


def test_a_failing_command_is_a_failed_tool_result_not_a_failed_turn() -> None:
    _, events = replay(load("failing_tool"))

    result = next(e for e in events if isinstance(e, ToolResult))
    assert result.is_error
    assert not [e for e in events if isinstance(e, Failed)]


def test_reasoning_is_its_own_event_before_the_text() -> None:
    _, events = replay(load("reasoning"))

    assert events[0] == Reasoning("Pondering.")
    assert text_of(events) == "Thought about it."


def test_two_messages_in_one_turn_are_separated_and_each_sent_once() -> None:
    recorded = load("two_messages")

    _, events = replay(recorded)

    text = text_of(events)
    assert text.startswith("Let me look.\n\nMOCK saw tool output:")
    assert text.count("Let me look.") == 1
    assert text == "\n\n".join(
        m["params"]["item"]["text"]
        for m in recorded.notifications
        if m["method"] == "item/completed" and m["params"]["item"]["type"] == "agentMessage"
    )


def test_an_applied_patch_is_a_tool_call_and_a_file_change() -> None:
    _, events = replay(load("file_change"))

    call = next(e for e in events if isinstance(e, ToolCall))
    change = next(e for e in events if isinstance(e, FileChange))
    assert call.name == "apply_patch"
    assert change.kind == "add"
    assert change.path.endswith("/hello.txt")


@pytest.mark.parametrize(
    ("fixture", "expected", "kind"),
    [
        ("http_500", "The model endpoint failed. Retry later. The daemon log", "upstream"),
        (
            "http_401",
            "The model endpoint refused the credentials (HTTP 401). Check the API key",
            "auth",
        ),
        ("stream_failed", "Codex could not finish the turn. The daemon log", "error"),
        (
            "missing_key",
            "Codex has no API key: the environment variable MOCK_API_KEY is not set.",
            "auth",
        ),
    ],
)
def test_a_failed_turn_ends_with_a_message_the_caller_can_act_on(
    fixture: str, expected: str, kind: str
) -> None:
    state, events = replay(load(fixture))

    assert state.done
    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.kind == kind
    assert failed.message.startswith(expected)
    assert "Traceback" not in failed.message


def test_the_401_message_names_where_the_key_comes_from() -> None:
    _, events = replay(load("http_401"))

    failed = events[-1]
    assert isinstance(failed, Failed)
    assert "OPENAI_API_KEY" in failed.message
    assert "codex login" in failed.message


def test_an_interrupted_turn_ends() -> None:
    state, events = replay(load("interrupted"))

    assert state.done
    assert events == [Failed("error", "Codex interrupted the turn before it finished.")]


def test_usage_after_a_resume_is_this_turns_not_the_threads_total() -> None:
    recorded = load("resumed")
    totals = [
        m["params"]["tokenUsage"]["total"]["inputTokens"]
        for m in recorded.notifications
        if m["method"] == "thread/tokenUsage/updated"
    ]

    _, events = replay(recorded)

    assert max(totals) > 100, "the recording shows Codex's cumulative total"
    assert events[-1] == Usage(input_tokens=100, output_tokens=10, model="gpt-5.5")
    assert "PAPAYA" in text_of(events), "the resumed thread replayed turn 1"


def test_notifications_of_another_turn_are_ignored() -> None:
    recorded = load("text")
    state = TurnState("another-turn")

    for message in recorded.notifications:
        state, events = map_notification(state, message["method"], message["params"])
        assert events == ()

    assert not state.done


def test_a_message_that_arrives_whole_is_sent_once() -> None:
    state = TurnState("t")
    completed = {"type": "agentMessage", "id": "m1", "text": "whole"}

    state, events = map_notification(state, "item/completed", {"turnId": "t", "item": completed})

    assert events == (TextDelta("whole"),)


def test_a_retried_model_error_is_progress() -> None:
    params = {"turnId": "t", "willRetry": True, "error": {"message": "overloaded"}}

    _, events = map_notification(TurnState("t"), "error", params)

    assert events == (Progress("Model request failed; Codex retries it"),)


def test_a_warning_during_the_turn_is_progress() -> None:
    # As app-server sends it (recorded), e.g. for a model slug missing from its catalogue.
    params = {"threadId": "th", "message": "Model metadata for `my-model` not found."}

    _, events = map_notification(TurnState("t"), "warning", params)

    assert events == (Progress("Codex warns: Model metadata for `my-model` not found."),)


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"message": "too long", "codexErrorInfo": "contextWindowExceeded"},
            "The conversation no longer fits the model's context window. Start a new "
            "conversation (a new contextId).",
        ),
        (
            {"message": "no more", "codexErrorInfo": "usageLimitExceeded"},
            "The account's usage limit or quota is used up.",
        ),
        (
            {
                "message": "slow down",
                "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 429}},
            },
            "The model endpoint is rate limiting requests (HTTP 429). Retry later.",
        ),
        (
            {"message": "bad", "codexErrorInfo": {"httpConnectionFailed": {"httpStatusCode": 502}}},
            "The model endpoint failed (HTTP 502). Retry later.",
        ),
        (
            {"message": "nope", "codexErrorInfo": "badRequest"},
            "The model endpoint rejected the request.",
        ),
        ({}, "Codex could not finish the turn."),
    ],
)
def test_error_kinds_map_to_actionable_messages(error: dict[str, Any], expected: str) -> None:
    assert describe_error(error) == expected


@pytest.mark.parametrize("info", [{"httpConnectionFailed": {"httpStatusCode": 401}}, "badRequest"])
def test_the_endpoint_s_words_reach_the_log_not_the_caller(info: Any) -> None:
    completed = {
        "turn": {
            "id": "t1",
            "status": "failed",
            "error": {"message": f"upstream body: {SECRET}", "codexErrorInfo": info},
        }
    }
    with capture_logs() as logs:
        _, events = map_notification(TurnState("t1", None), "turn/completed", completed)

    failed = events[-1]
    assert isinstance(failed, Failed)
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == "codex.turn.failed"
