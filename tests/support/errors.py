"""Checks of the Failed contract (core.backend.Failed): the caller's message carries an error id
and none of the raw text, which the log holds under that id."""

from __future__ import annotations

import re
import traceback
from collections.abc import Mapping, MutableMapping, Sequence
from typing import Any

from structlog.testing import capture_logs

from core.backend import Backend, BackendEvent, TextContent, Turn

# What with_error_id() appends: the message ends with it.
ERROR_ID = re.compile(r"The daemon log has the details \(error id ([0-9a-f]{12})\)\.$")
# Text no caller may see: it stands for an upstream body or SDK error quoting a credential.
SECRET = "leaked secret sk-test-0123456789abcdef"  # noqa: S105 - a fake key


def error_id(message: str) -> str:
    match = ERROR_ID.search(message)
    assert match, f"no error id in {message!r}"
    return match.group(1)


def raw_text(entry: Mapping[str, Any]) -> str:
    """Everything a log entry says about the failure: `detail` and the exception's traceback
    (what the JSON renderer writes as `exception`)."""
    parts = [str(entry.get("detail") or "")]
    exc = entry.get("exc_info")
    if isinstance(exc, BaseException):
        parts.append("".join(traceback.format_exception(exc)))
    return "\n".join(parts)


def assert_logged_safely(
    message: str, logs: Sequence[Mapping[str, Any]], secret: str = SECRET
) -> Mapping[str, Any]:
    """`message` carries an error id and not `secret`; the log entry under that id has it.
    Returns that entry."""
    assert secret not in message, message
    wanted = error_id(message)
    entries = [e for e in logs if e.get("error_id") == wanted]
    assert len(entries) == 1, logs
    assert secret in raw_text(entries[0]), entries[0]
    return entries[0]


TURN = Turn("p", "ctx", "task-1", "m-1", None, (TextContent("Hello?"),))


async def one_turn(
    backend: Backend,
) -> tuple[list[BackendEvent], list[MutableMapping[str, Any]]]:
    """Run TURN on a started `backend` with the log captured, then close the backend."""
    try:
        with capture_logs() as logs:
            events = [event async for event in backend.run_turn(TURN)]
    finally:
        await backend.aclose()
    return events, logs
