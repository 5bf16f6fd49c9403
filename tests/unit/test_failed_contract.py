"""The Failed contract's helper (core.backend.safe_failure): the caller's sentence carries an
error id, the raw text is logged under it, and nothing of it reaches the message."""

from __future__ import annotations

from structlog.testing import capture_logs

from core.backend import Failed, safe_failure, with_error_id
from tests.support.errors import SECRET, assert_logged_safely, error_id


def test_an_exception_s_text_is_logged_under_the_id_the_sentence_carries() -> None:
    exc = ConnectionError(f"the agent's pipe broke: {SECRET}")
    with capture_logs() as logs:
        failed = safe_failure("error", "The agent refused the prompt.", event="x.refused", exc=exc)

    assert failed.kind == "error"
    assert failed.message.startswith("The agent refused the prompt. The daemon log has")
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == "x.refused"
    assert entry["log_level"] == "error"


def test_a_detail_and_context_are_logged_and_each_failure_has_its_own_id() -> None:
    with capture_logs() as logs:
        first = safe_failure("unavailable", "Down", event="x.down", detail=SECRET, exit_code=3)
        second = safe_failure("unavailable", "Down", event="x.down", detail=SECRET, exit_code=3)

    first_id = error_id(first.message)
    assert first == Failed("unavailable", with_error_id("Down", first_id), error_id=first_id)
    assert error_id(first.message) != error_id(second.message)
    assert assert_logged_safely(first.message, logs)["exit_code"] == 3
    assert "exc_info" not in logs[0]


def test_the_id_sentence_follows_the_caller_s_punctuation() -> None:
    assert with_error_id("The agent failed", "abc") == (
        "The agent failed. The daemon log has the details (error id abc)."
    )
    assert with_error_id("Retry later. ", "abc") == (
        "Retry later. The daemon log has the details (error id abc)."
    )


def test_a_providers_refusal_in_the_raw_text_names_its_kind_and_when_to_retry() -> None:
    body = '{"error": {"message": "Rate limit reached. Please try again in 20s.",'
    body += ' "code": "rate_limit_exceeded"}}'
    with capture_logs() as logs:
        limited = safe_failure("error", "The agent failed.", event="x.failed", detail=body)
        refused = safe_failure("error", "x", event="x.failed", detail="401 Unauthorized " + SECRET)
        quota = safe_failure("unavailable", "x", event="x.failed", detail="insufficient_quota")
        spent = safe_failure(
            "error", "x", event="x.failed", detail="usage_limit_reached, resets_at: 1900000000"
        )
        crashed = safe_failure("error", "The agent failed.", event="x.failed", detail="exit 3")

    assert (limited.kind, limited.retry_after) == ("rateLimit", 20.0)
    assert limited.message.startswith("The agent failed. Try again in 20 s. The daemon log")
    assert refused.kind == "auth"
    assert SECRET not in refused.message
    assert quota.kind == "quota"
    assert spent.kind == "quota"
    assert spent.resets_at is not None and spent.resets_at.year == 2030
    assert crashed.kind == "error"
    assert [entry.get("kind") for entry in logs[:4]] == ["rateLimit", "auth", "quota", "quota"]
    assert_logged_safely(refused.message, logs)
