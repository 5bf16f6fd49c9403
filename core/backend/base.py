"""What every backend shares: `BackendBase` (no-op defaults for everything but `run_turn`),
the one `BackendUnavailableError`, and `serve_backend`, how the engine runs a backend's
background work in its own task group.

Lifecycle the engine follows: `start()` (check the configuration, start what a first turn
needs; raise to refuse to start), then `serve(task_status=...)` as a task of the engine's task
group (report `task_status.started()` once ready; background work — readers, idle eviction,
stopping retired processes — runs inside it, and it is cancelled at shutdown), then
`aclose()` after `serve` has been cancelled (stop the agent processes for sure). A backend
without `serve` (the older protocol) simply has no background work for the engine to host.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from pathlib import Path
from typing import Protocol, runtime_checkable

import anyio
from anyio.abc import TaskStatus

from core.backend import (
    GENERIC_FIX,
    Backend,
    BackendEvent,
    Diagnosis,
    Failed,
    Health,
    Turn,
    safe_failure,
)


class BackendUnavailableError(RuntimeError):
    """The agent cannot run now (no binary, a child that does not start, a server that is
    gone). `str()` is for the operator and the log (it may quote paths and agent output);
    `caller_message` is the sentence a caller may see."""

    def __init__(self, detail: str, *, caller_message: str = "The agent is not available.") -> None:
        super().__init__(detail)
        self.caller_message = caller_message

    def failure(self, *, event: str) -> Failed:
        """This as the turn's Failed event: the caller's sentence, the detail logged under an
        error id."""
        return safe_failure("unavailable", self.caller_message, event=event, exc=self)


@runtime_checkable
class Serving(Protocol):
    """A backend with background work (optional beside `Backend`)."""

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None: ...


async def serve_backend(
    backend: Backend, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    """Run `backend.serve` (the engine starts this with `tg.start()` after `start()`); a
    backend without one is ready at once and has nothing to run."""
    if isinstance(backend, Serving):
        await backend.serve(task_status=task_status)
    else:
        task_status.started()


@asynccontextmanager
async def serving(
    backend: Backend,
    start_errors: Callable[[], AbstractContextManager[object]] = nullcontext,
) -> AsyncIterator[None]:
    """`backend.start()`, then its `serve()` in a task group of the caller's task, until the
    block ends (then `serve` is cancelled; `aclose()` stays the caller's). A failure of
    `start`, or of `serve` before it is ready, is raised as it is (not in an exception group),
    inside `start_errors()` (the engine turns it into its start-up error there)."""
    with start_errors():
        await backend.start()
    failure: list[Exception] = []
    async with anyio.create_task_group() as tg:
        try:
            await tg.start(serve_backend, backend)
        except Exception as exc:  # noqa: BLE001 - re-raised below, outside the task group
            failure.append(exc)
        else:
            try:
                yield
            finally:
                tg.cancel_scope.cancel()
    if failure:
        with start_errors():
            raise failure[0]


@asynccontextmanager
async def running(backend: Backend) -> AsyncIterator[Backend]:
    """The backend started, served and finally closed, as the engine runs it: for tests and
    tools that drive a backend without the daemon."""
    try:
        async with serving(backend):
            yield backend
    finally:
        await backend.aclose()


class BackendBase:
    """A base for backends: every method of `Backend` but `run_turn` does nothing useful yet.

    Override what the agent needs: `start`/`serve`/`aclose` for processes and background
    work, `interrupt` to stop a running turn (required as soon as a turn can outlive the
    cancellation of its consumer), `drop_session`, `health`, `diagnose`, `resume_command`.
    """

    name: str = "backend"

    async def start(self) -> None:
        return None

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()

    async def aclose(self) -> None:
        return None

    def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        raise NotImplementedError

    async def interrupt(self, turn: Turn) -> None:
        return None

    async def drop_session(self, session_id: str) -> None:
        return None

    async def health(self) -> Health:
        return Health(ok=True)

    async def diagnose(self) -> list[Diagnosis]:
        return []

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return None

    def credentials_fix(self) -> str:
        """What to do on the daemon's host when the provider refuses the agent's credentials
        (the exact command or variable), for the AUTH_REQUIRED status message."""
        return GENERIC_FIX
