"""Where tasks live between requests and across restarts.

A store keeps each task's latest snapshot scoped by principal: another principal's task is
indistinguishable from a missing one. `InMemoryTaskStore` is for tests and ephemeral daemons;
`SqliteTaskStore` (sqlite_store.py) is the default.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from core.storage.queued import Queued, done
from core.storage.sqlite.database import ROW_ERRORS
from core.wire.base import format_timestamp, utcnow
from core.wire.enums import TaskState
from core.wire.errors import InvalidParamsError, StorageUnavailableError, TaskUnreadableError
from core.wire.models import Message, Part, Task, TaskStatus

ACTIVE_STATES = (TaskState.SUBMITTED, TaskState.WORKING)
TERMINAL_STATES = tuple(s for s in TaskState if s.terminal)


class StaleWriteError(StorageUnavailableError):
    """The store refused to write a task's snapshot: the stored task is terminal and the
    snapshot differs (a terminal task never changes), or, with replicas, this replica no
    longer holds its lease (another replica may own its contexts now). A caller that meets
    it may try again (a replica rejoins at its next heartbeat)."""

    default_message = (
        "The daemon could not store this task (the task ended already, or this replica lost "
        "its hold on the storage for a moment); try again shortly"
    )


@dataclass(frozen=True)
class TaskQuery:
    context_id: str | None = None
    state: TaskState | None = None
    status_after: datetime | None = None
    page_size: int = 50
    page_token: str | None = None


@dataclass(frozen=True)
class TaskPage:
    tasks: list[Task]
    next_page_token: str
    total_size: int


class TaskStore(Protocol):
    """Persistence of task snapshots. Every method is safe to call from the event loop."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def probe(self) -> None:
        """Raise unless the store can take a write now (readiness)."""
        ...

    def save(self, principal: str, task: Task) -> Queued[None]:
        """Insert or replace the snapshot of `task`: queued when called (core/storage/queued.py).
        StaleWriteError when the stored task is terminal and `task` differs from it."""
        ...

    async def get(self, principal: str, task_id: str) -> Task | None:
        """None when there is no such task; `TaskUnreadableError` when it is stored but its
        record cannot be decoded."""
        ...

    async def delete(self, principal: str, task_id: str) -> None: ...

    async def list(self, principal: str, query: TaskQuery) -> TaskPage:
        """Tasks newest first by status timestamp (ties by id, descending), cursor-paged.
        Records that cannot be decoded are left out (a page may then be short)."""

    async def fail_unfinished(self, reason: str) -> int:
        """Mark every SUBMITTED/WORKING task FAILED with `reason`; returns how many."""

    async def purge_terminal(self, before: datetime) -> int:
        """Delete terminal tasks whose status is older than `before`; returns how many."""


def sort_key(task: Task) -> tuple[str, str]:
    ts = task.status.timestamp
    return (format_timestamp(ts) if ts else "", task.id)


def encode_cursor(task: Task) -> str:
    return cursor_of(*sort_key(task))


def cursor_of(status_ts: str, task_id: str) -> str:
    """The page token that resumes after the task with this sort key."""
    raw = json.dumps([status_ts, task_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[str, str]:
    invalid = InvalidParamsError("Invalid pageToken", violations=[("pageToken", "invalid")])
    try:
        padded = token + "=" * (-len(token) % 4)
        ts, task_id = json.loads(base64.urlsafe_b64decode(padded))
    except (binascii.Error, ValueError, TypeError) as exc:
        raise invalid from exc
    if not isinstance(ts, str) or not isinstance(task_id, str):
        raise invalid
    return ts, task_id


Report = Callable[[str, dict[str, object], Exception], None]


def decode_task(report: Report, principal: str, task_id: object, body: object) -> Task | None:
    """A stored body as a task, or None (reported once, `unreadable`) when it cannot be."""
    try:
        if not isinstance(body, str | bytes):
            raise TypeError(f"body is {type(body).__name__}")
        return Task.model_validate_json(body)
    except ROW_ERRORS as exc:
        report("tasks", {"principal": principal, "id": task_id}, exc)
        return None


def unreadable_task(task_id: str) -> TaskUnreadableError:
    return TaskUnreadableError(
        f"Task {task_id} cannot be read from the daemon's storage (its record is damaged), so "
        "it is treated as not found"
    )


def failed_by_restart(task: Task, reason: str) -> Task:
    note = Message(
        message_id=f"{task.id}-restart",
        context_id=task.context_id,
        task_id=task.id,
        role="ROLE_AGENT",
        parts=[Part(text=reason)],
    )
    return task.model_copy(
        update={"status": TaskStatus(state=TaskState.FAILED, message=note, timestamp=utcnow())}
    )


class InMemoryTaskStore:
    """A dict of snapshots; same semantics as the SQLite store, nothing survives the process."""

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], Task] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def probe(self) -> None:
        return None

    def save(self, principal: str, task: Task) -> Queued[None]:
        stored = self._tasks.get((principal, task.id))
        if stored is not None and stored.status.state.terminal and stored != task:
            raise StaleWriteError
        # Tasks are frozen wire models: keeping the object itself is keeping a snapshot.
        self._tasks[(principal, task.id)] = task
        return done()

    async def get(self, principal: str, task_id: str) -> Task | None:
        task = self._tasks.get((principal, task_id))
        return task

    async def delete(self, principal: str, task_id: str) -> None:
        self._tasks.pop((principal, task_id), None)

    async def list(self, principal: str, query: TaskQuery) -> TaskPage:
        matching = [
            t
            for (owner, _), t in self._tasks.items()
            if owner == principal
            and (query.context_id is None or t.context_id == query.context_id)
            and (query.state is None or t.status.state == query.state)
            and (
                query.status_after is None
                or (t.status.timestamp is not None and t.status.timestamp >= query.status_after)
            )
        ]
        matching.sort(key=sort_key, reverse=True)
        total = len(matching)
        if query.page_token:
            cursor = decode_cursor(query.page_token)
            matching = [t for t in matching if sort_key(t) < cursor]
        page = matching[: query.page_size]
        more = len(matching) > query.page_size
        token = encode_cursor(page[-1]) if more and page else ""
        return TaskPage(page, token, total)

    async def fail_unfinished(self, reason: str) -> int:
        stale = [k for k, t in self._tasks.items() if t.status.state in ACTIVE_STATES]
        for key in stale:
            self._tasks[key] = failed_by_restart(self._tasks[key], reason)
        return len(stale)

    async def purge_terminal(self, before: datetime) -> int:
        old = [
            k
            for k, t in self._tasks.items()
            if t.status.state.terminal and t.status.timestamp and t.status.timestamp < before
        ]
        for key in old:
            del self._tasks[key]
        return len(old)
