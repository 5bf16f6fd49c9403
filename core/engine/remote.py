"""What the engine asks of the other replicas (storage.kind "postgres"; core/cluster/lease.py
implements it): whether a task runs on another live replica, its events from there, and a
cancel delivered to it. Without replicas (`NO_REMOTE`) every task is local."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol

from core.storage.push import PushVersion
from core.wire.models import SendMessageRequest, StreamResponse, Task


class EventSource(Protocol):
    """The events of one watched task, in order; `close` stops watching (idempotent)."""

    def __aiter__(self) -> AsyncIterator[StreamResponse]: ...

    def close(self) -> None: ...


class RemoteTasks(Protocol):
    def record(self, principal: str, task_id: str, event: StreamResponse) -> None:
        """Called with each event of a task that runs here, in order; never waits. The event
        reaches the other replicas' watchers in that order."""

    async def running_elsewhere(self, principal: str, task_id: str) -> bool:
        """True when another live replica runs a turn of the task now."""
        ...

    def watch(self, principal: str, task_id: str) -> EventSource:
        """The events of a task running on another replica: its latest Task snapshot first,
        then every later event, in order, none twice."""
        ...

    async def cancel(self, principal: str, task_id: str) -> Task:
        """Ask the replica that runs the task to cancel it, wait (bounded) until the task is
        terminal, and return it as stored."""
        ...

    async def owner_elsewhere(self, principal: str, context_id: str) -> str | None:
        """The live replica that owns the context when it is not this one; else None, and
        this one owns it from now on."""
        ...

    async def forward(
        self, owner: str, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> EventSource:
        """Have `owner` run the turn: the events of its task from the turn's Task snapshot
        on. Raises the owner's refusal as the same error."""
        ...


class NoRemote:
    """A single daemon: nothing runs elsewhere."""

    def record(self, principal: str, task_id: str, event: StreamResponse) -> None:
        return None

    async def running_elsewhere(self, principal: str, task_id: str) -> bool:
        return False

    def watch(self, principal: str, task_id: str) -> EventSource:
        raise RuntimeError("no other replica")

    async def cancel(self, principal: str, task_id: str) -> Task:
        raise RuntimeError("no other replica")

    async def owner_elsewhere(self, principal: str, context_id: str) -> str | None:
        return None

    async def forward(
        self, owner: str, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> EventSource:
        raise RuntimeError("no other replica")


NO_REMOTE = NoRemote()
