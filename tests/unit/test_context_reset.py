"""A turn that cannot resume its context's session says so (`a2aWrapper.contextReset`): when
the backend binds another session than the one the turn resumed, or says why first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from core.engine.wrapper_section import UNKNOWN_RESET, WrapperSection
from core.wire.enums import TaskState
from core.wire.models import Task, TaskStatus


def test_another_session_than_the_resumed_one_is_a_reset() -> None:
    resumed = WrapperSection(backend="x", leased=True, session_id="old")

    lost = resumed.bound("new", "x --resume new").render()
    kept = resumed.bound("old", "x --resume old").render()
    fresh = WrapperSection(backend="x", leased=True).bound("first", None).render()

    assert (lost["contextReset"], lost["resetReason"], lost["newSession"]) == (
        True,
        UNKNOWN_RESET,
        True,
    )
    assert (kept["contextReset"], "resetReason" in kept) == (False, False)
    assert fresh["contextReset"] is False, "a first session is new, not a reset"


def test_the_backends_reason_is_kept_and_read_back() -> None:
    section = WrapperSection(backend="x", leased=True, session_id="old")

    told = section.reset("The saved conversation is gone.").bound("new", None)

    rendered = told.render()
    assert rendered["contextReset"] is True
    assert rendered["resetReason"] == "The saved conversation is gone."
    error: dict[str, JsonValue] = {"kind": "rateLimit", "retryAfter": 2.0, "errorId": "abc"}
    from_store = {"a2aWrapper": {**rendered, "error": error}}
    assert WrapperSection.of(_task(from_store)) == WrapperSection(
        backend="x",
        leased=True,
        session_id="new",
        new_session=True,
        context_reset=True,
        reset_reason="The saved conversation is gone.",
        error=error,
    )


def _task(metadata: Mapping[str, Any]) -> Task:
    status = TaskStatus(state=TaskState.COMPLETED)
    return Task(id="t", context_id="c", status=status, metadata=dict(metadata))
