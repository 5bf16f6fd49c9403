"""Errors that stop the daemon before it serves: one line for the operator and an exit code.

They are raised where the failing thing is called (the stores' open, the backend's start, the
listening socket) from whatever it raised, so the CLI can print one clear line instead of a
traceback. The exit codes are part of the CLI's contract (docs/operations.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar


class StartupError(Exception):
    """The daemon cannot start. `str()` is one line saying what failed and why."""

    exit_code: ClassVar[int] = 1
    what: ClassVar[str] = "cannot start"


class StorageStartError(StartupError):
    exit_code = 3
    what = "cannot open the storage"


class BackendStartError(StartupError):
    exit_code = 4
    what = "the backend cannot start"


class ListenError(StartupError):
    exit_code = 5
    what = "cannot listen"


def one_line(exc: BaseException) -> str:
    """The first line of the exception's text, or its type when it has none."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


@contextmanager
def failing_as(error: type[StartupError]) -> Iterator[None]:
    """Any exception but cancellation (and a StartupError already) becomes `error`."""
    try:
        yield
    except StartupError:
        raise
    except Exception as exc:
        raise error(one_line(exc)) from exc
