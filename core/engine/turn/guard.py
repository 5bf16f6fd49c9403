"""The fence around every call into a backend: whatever a backend raises ends its own turn.

A backend is third-party code (a `module:attr` backend, an SDK underneath a wrapper). An
`Exception` from it already fails only its turn; a non-cancellation `BaseException`
(`SystemExit`, `KeyboardInterrupt`, a `GeneratorExit` raised by hand) would otherwise unwind
through the service's task group and stop the daemon with every other turn. Cancellation is
never caught here: it belongs to the engine's own scopes (style.md rule 5).

The fence covers what runs in the turn's own task (the `run_turn` generator, `interrupt`); a
task the backend starts outside a task group of its own is beyond any caller's reach.
"""

from __future__ import annotations

from types import TracebackType

import anyio


class BackendCrashError(Exception):
    """A backend call raised a BaseException that is not cancellation; `__cause__` holds it."""


def _is_cancellation(exc: BaseException) -> bool:
    cancelled = anyio.get_cancelled_exc_class()
    if isinstance(exc, cancelled):
        return True
    if isinstance(exc, BaseExceptionGroup):
        # A group that carries a cancellation is still a cancellation for the scope above.
        return exc.subgroup(cancelled) is not None
    return False


class backend_call:
    """`with backend_call("interrupt"): await backend.interrupt(turn)`: a non-cancellation
    BaseException leaving the block is re-raised as BackendCrashError (an Exception, so the
    turn's ordinary failure path logs it under an error id and fails that task only).
    Exceptions and cancellation pass through unchanged."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc is None or isinstance(exc, Exception) or _is_cancellation(exc):
            return
        raise BackendCrashError(f"the backend's {self._what} raised {type(exc).__name__}") from exc
