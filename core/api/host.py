"""What a binding gets from the daemon it serves, and what a binding is.

A binding is one function, `serve(host, *, task_status)`: it binds, reports the URLs it
listens on through `task_status.started([...])`, serves every request through
`host.ops` until `host.wait_stopping()` returns, then stops accepting, lets the calls in
flight end (the daemon drains the engine meanwhile) and returns. The daemon starts each with
`tg.start` after the engine and the cluster are up, and closes those only after every binding
has returned (core/daemon.py). A new way in is one folder under core/bindings with such a
function, started by the daemon when its settings block says so.
"""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import Any, Protocol

from anyio.abc import TaskStatus

from core.api.card import CardProvider
from core.api.operations import Operations
from core.engine.service import TaskService
from core.settings import Settings
from core.usage.observers import AppObservers


class Host(Protocol):
    settings: Settings
    ops: Operations
    card: CardProvider
    # Readiness, draining and the session sweep (the HTTP binding's /ready, tests).
    service: TaskService
    observers: AppObservers

    async def serve(
        self, bindings: Sequence[Binding], *, task_status: TaskStatus[list[str]]
    ) -> None:
        """Run the daemon with `bindings` until stopped (core/daemon.py)."""
        ...

    async def wait_stopping(self) -> None:
        """Returns once the daemon is asked to stop."""
        ...

    async def stop(self) -> None:
        """Ask the daemon to stop and wait until its turns are drained."""
        ...


class Binding(Protocol):
    def __call__(
        self, host: Host, *, task_status: TaskStatus[list[str]]
    ) -> Coroutine[Any, Any, None]: ...
