"""The pure mapping from OpenCode's `/event` stream to BackendEvents, on events recorded from
the real `opencode serve` 1.18.33 (`recorded/`, made by `record_events.py`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Failed,
    FileChange,
    Progress,
    TextDelta,
    ToolCall,
    ToolResult,
)
from tests.support.errors import SECRET, assert_logged_safely
from wrappers.opencode.events import (
    AbortTurn,
    Action,
    AnswerApproval,
    RejectPermission,
    TurnMapper,
    describe_error,
)
from wrappers.opencode.router import session_of

RECORDED = Path(__file__).parent / "recorded"


@dataclass
class Played:
    events: list[BackendEvent] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    mapper: TurnMapper | None = None
    consumed: int = 0  # events fed before the mapper said done

    @property
    def text(self) -> str:
        return "".join(e.text for e in self.events if isinstance(e, TextDelta))


def recording(
    name: str, replace: tuple[str, str] = ("", "")
) -> tuple[list[dict[str, str]], list[dict[str, Any]]]:
    """The recorded turns' ids and events; `replace` rewrites text in them (old, new)."""
    text = (RECORDED / f"{name}.jsonl").read_text()
    if replace[0]:
        text = text.replace(*replace)
    lines = [json.loads(line) for line in text.splitlines()]
    turns = [line["turn"] for line in lines if "turn" in line]
    return turns, [line for line in lines if "turn" not in line]


def play(
    name: str,
    *,
    turn: int = 0,
    max_retries: int | None = 3,
    approvals: str = "policy",
    replace: tuple[str, str] = ("", ""),
) -> Played:
    turns, events = recording(name, replace)
    ids = turns[turn]
    mapper = TurnMapper(
        ids["sessionID"],
        ids["messageID"],
        max_retries=max_retries,
        approvals="ask" if approvals == "ask" else "policy",
    )
    played = Played(mapper=mapper)
    for event in events:
        assert session_of(event) == ids["sessionID"]
        if mapper.done:
            break
        step = mapper.feed(event)
        played.events += step.events
        played.actions += step.actions
        played.consumed += 1
    return played


def test_a_text_turn_streams_each_delta_once_then_usage() -> None:
    played = play("text")

    assert played.mapper is not None and played.mapper.done
    assert all(isinstance(e, TextDelta) for e in played.events)
    assert [e.text for e in played.events if isinstance(e, TextDelta)] == [
        "Hello ",
        "from ",
        "the ",
        "mock ",
        "model.",
    ]
    assert played.mapper.failure is None
    usage = played.mapper.usage()
    assert usage is not None
    assert usage.input_tokens > 1000  # OpenCode's system prompt
    assert (usage.output_tokens, usage.cost_usd, usage.model) == (5, None, "mock-model")


def test_a_tool_turn_shows_the_call_and_its_result_then_the_answer() -> None:
    played = play("tool_bash")

    tools = [e for e in played.events if isinstance(e, ToolCall | ToolResult)]
    assert len(tools) == 2
    call, result = tools
    assert isinstance(call, ToolCall) and isinstance(result, ToolResult)
    assert call.name == "bash"
    assert call.input == {"command": "echo hi", "description": "Print hi"}
    assert result == ToolResult(call.call_id, "hi\n", is_error=False)
    assert played.text == "TOOL RESULT SEEN: hi\n"
    usage = played.mapper.usage() if played.mapper else None
    # Two model calls (the tool call, then the answer): their tokens add up.
    assert usage is not None and usage.output_tokens == 5 + 4


def test_a_written_file_is_a_file_change() -> None:
    played = play("tool_write")

    changes = [e for e in played.events if isinstance(e, FileChange)]
    assert len(changes) == 1
    assert changes[0].path.endswith("/project/made.txt")
    assert changes[0].kind == "add"


def test_a_failing_tool_is_an_error_result_and_the_turn_goes_on() -> None:
    played = play("tool_error")

    results = [e for e in played.events if isinstance(e, ToolResult)]
    assert len(results) == 1 and results[0].is_error
    assert "prevents you from using this specific tool call" in results[0].output
    assert played.text.startswith("TOOL RESULT SEEN: ")
    assert played.mapper is not None and played.mapper.failure is None


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("error_400", "The model endpoint returned an error (HTTP 400). The daemon log has"),
        ("error_401", "The model endpoint refused the credentials (HTTP 401). Check the API key"),
    ],
)
def test_a_model_error_fails_the_turn_with_a_readable_message(name: str, message: str) -> None:
    played = play(name)

    assert played.mapper is not None and played.mapper.done
    assert played.mapper.failure is not None
    assert played.mapper.failure.message.startswith(message)
    assert played.text == ""


@pytest.mark.parametrize(
    ("name", "upstream"),
    [
        ("error_401", "Incorrect API key provided"),
        ("error_400", "bad request from mock"),
        ("error_500_retry", "mock server error"),
    ],
)
def test_the_endpoint_s_words_reach_the_log_not_the_caller(name: str, upstream: str) -> None:
    with capture_logs() as logs:
        played = play(name, max_retries=0, replace=(upstream, SECRET))

    assert played.mapper is not None and played.mapper.failure is not None
    assert_logged_safely(played.mapper.failure.message, logs)
    assert not any(SECRET in getattr(e, "text", "") for e in played.events)


def test_an_error_turn_ends_only_at_the_idle_after_its_message_is_final() -> None:
    """OpenCode sends session.idle, then the failed message, then idle again: the turn must
    consume both, or the second idle would end the next turn."""
    _, events = recording("error_401")
    played = play("error_401")

    idles = [i for i, e in enumerate(events) if e["type"] == "session.idle"]
    assert len(idles) == 2
    assert played.consumed == idles[1] + 1


def test_retries_beyond_the_limit_ask_for_an_abort() -> None:
    within = play("error_500_retry", max_retries=3)
    beyond = play("error_500_retry", max_retries=0)

    assert within.actions == []
    assert any(isinstance(e, Progress) and "retries" in e.text for e in within.events)
    (abort,) = beyond.actions
    assert isinstance(abort, AbortTurn)
    assert beyond.mapper is not None
    assert beyond.mapper.failure is not None
    assert beyond.mapper.failure.message == abort.reason
    assert "keeps failing; gave up after 1 attempts" in abort.reason


def test_an_aborted_turn_keeps_its_partial_text_and_settles_at_the_last_idle() -> None:
    _, events = recording("abort")
    played = play("abort")

    assert played.text == "Partial answer "
    assert played.mapper is not None and played.mapper.done
    assert played.mapper.failure == Failed("error", "The turn was aborted in OpenCode.")
    assert played.consumed == len(events)  # through the second idle


def test_late_events_of_an_aborted_turn_never_leak_into_the_next() -> None:
    aborted = play("abort_then_next", turn=0)
    following = play("abort_then_next", turn=1)

    assert aborted.text == "Partial answer "
    assert following.text == "MOCK REPLY: go on"
    assert following.mapper is not None and following.mapper.failure is None
    assert following.mapper.done


def test_a_permission_request_is_rejected_and_reported() -> None:
    played = play("permission_rejected")

    (reject,) = played.actions
    assert isinstance(reject, RejectPermission)
    assert reject.request_id.startswith("per_")
    assert Progress("Denied permission bash") in played.events
    results = [e for e in played.events if isinstance(e, ToolResult)]
    assert results and results[0].is_error


def test_with_approvals_ask_a_permission_request_is_a_question_for_the_caller() -> None:
    played = play("permission_rejected", approvals="ask")

    requests = [e for e in played.events if isinstance(e, ApprovalRequest)]
    (request,) = requests
    assert request.request_id.startswith("per_")
    assert (request.kind, request.tool) == ("command", "bash")
    assert request.summary == "Run `echo hi` in the working directory"
    assert request.detail["patterns"] == ["echo hi"]
    (action,) = played.actions
    assert action == AnswerApproval(request.request_id, request)


def test_text_snapshots_fill_in_what_deltas_missed_without_repeating() -> None:
    mapper = TurnMapper("ses_1", "msg_1", max_retries=None)
    feed = [
        {"type": "message.updated", "properties": {"info": {"id": "msg_1", "role": "user"}}},
        _assistant("msg_2"),
        _text_part("prt_1", "msg_2", "Hel"),
        {
            "type": "message.part.delta",
            "properties": {"messageID": "msg_2", "partID": "prt_1", "field": "text", "delta": "lo"},
        },
        _text_part("prt_1", "msg_2", "Hello, world"),
        _text_part("prt_1", "msg_2", "Hello, world"),
        _text_part("prt_2", "msg_2", "Second part"),
    ]
    out = [e for event in feed for e in mapper.feed(event).events]

    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == (
        "Hello, world\n\nSecond part"
    )


def test_events_of_other_turns_and_before_the_prompt_are_ignored() -> None:
    mapper = TurnMapper("ses_1", "msg_5", max_retries=None)
    ignored = [
        {"type": "session.idle", "properties": {"sessionID": "ses_1"}},
        {"type": "session.error", "properties": {"error": {"name": "MessageAbortedError"}}},
        _assistant("msg_3", parent="msg_2"),
        _text_part("prt_9", "msg_3", "old text"),
    ]
    for event in ignored:
        assert mapper.feed(event).events == []
    assert not mapper.done
    assert mapper.failure is None


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (
            {"name": "ProviderAuthError", "data": {"providerID": "anthropic", "message": "no key"}},
            "Missing or invalid credentials for anthropic. Set its API key",
        ),
        (
            {"name": "APIError", "data": {"statusCode": 429, "message": "slow down"}},
            "rate limiting or out of quota (HTTP 429).",
        ),
        (
            {"name": "ContextOverflowError", "data": {"message": "too long"}},
            "no longer fits the model's context window",
        ),
        ({"name": "MessageOutputLengthError", "data": {}}, "output token limit"),
        (
            {"name": "SomethingNew", "data": {"message": "odd"}},
            "OpenCode failed (SomethingNew).",
        ),
    ],
)
def test_error_messages_say_what_to_do(error: dict[str, Any], expected: str) -> None:
    assert expected in describe_error(error)


def _assistant(message_id: str, parent: str = "msg_1") -> dict[str, Any]:
    info = {"id": message_id, "role": "assistant", "parentID": parent, "time": {}}
    return {"type": "message.updated", "properties": {"info": info}}


def _text_part(part_id: str, message_id: str, text: str) -> dict[str, Any]:
    part = {"id": part_id, "messageID": message_id, "type": "text", "text": text}
    return {"type": "message.part.updated", "properties": {"part": part}}
