"""The Failed contract's helper (core.backend.safe_failure): the caller's sentence carries an
error id, the raw text is logged under it, and nothing of it reaches the message."""

from __future__ import annotations

from structlog.testing import capture_logs

from core.backend import Failed, safe_failure, with_error_id
from tests.support.errors import SECRET, assert_logged_safely, error_id


def test_an_exception_s_text_is_logged_under_the_id_the_sentence_carries() -> None:
    exc = ConnectionError(f"POST /v1/chat: HTTP 502: {SECRET}")
    with capture_logs() as logs:
        failed = safe_failure("error", "The agent refused the prompt.", event="x.refused", exc=exc)

    assert failed.kind == "error"
    assert failed.message.startswith("The agent refused the prompt. The daemon log has")
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == "x.refused"
    assert entry["log_level"] == "error"


def test_a_detail_and_context_are_logged_and_each_failure_has_its_own_id() -> None:
    with capture_logs() as logs:
        first = safe_failure("unavailable", "Down", event="x.down", detail=SECRET, status=503)
        second = safe_failure("unavailable", "Down", event="x.down", detail=SECRET, status=503)

    assert first == Failed("unavailable", with_error_id("Down", error_id(first.message)))
    assert error_id(first.message) != error_id(second.message)
    assert assert_logged_safely(first.message, logs)["status"] == 503
    assert "exc_info" not in logs[0]


def test_the_id_sentence_follows_the_caller_s_punctuation() -> None:
    assert with_error_id("The agent failed", "abc") == (
        "The agent failed. The daemon log has the details (error id abc)."
    )
    assert with_error_id("Retry later. ", "abc") == (
        "Retry later. The daemon log has the details (error id abc)."
    )
