"""What every storage engine keeps, as contracts: the five stores (tasks, sessions,
workspaces, push, usage) and the records they hold. The engines implement them in
core/storage/memory.py, sqlite/ and postgres/ (one module per store); tests/storage runs one
contract suite over all three.

Every store is scoped by principal where its records are: another principal's record is
indistinguishable from a missing one. Every method is safe to call from the event loop; a
method typed `-> Queued[T]` has done or queued its write when it returns (core/storage/queued.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol

from core.storage.queued import Queued
from core.wire.enums import TaskState
from core.wire.errors import StorageUnavailableError
from core.wire.models import Task, TaskPushNotificationConfig

# ----- tasks: each task's latest snapshot -------------------------------------------------

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


# ----- sessions: `(principal, contextId) -> backend session` --------------------------------


@dataclass(frozen=True)
class SessionRecord:
    principal: str
    context_id: str
    backend: str
    session_id: str
    created_at: datetime
    last_used_at: datetime
    turns: int = 0


class SessionStore(Protocol):
    """Mappings keyed by (principal, context_id); one backend session per key. A store only
    keeps records (and a tombstone per key the sweep expired, until the next turn there or the
    retention); what counts as expired is decided in core/sessions/policy.py and applied by
    core/sessions/manager.py."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get(self, principal: str, context_id: str) -> SessionRecord | None: ...

    async def lookup(self, principal: str, context_id: str) -> tuple[SessionRecord | None, bool]:
        """The key's mapping; when there is none, also take its tombstone (True when there was
        one). One transaction: the lookup a turn starts with."""
        ...

    async def put(self, record: SessionRecord) -> None:
        """Insert or replace the mapping of the record's key."""
        ...

    def touch(
        self, principal: str, context_id: str, session_id: str, used_at: datetime
    ) -> Queued[None]:
        """Count one more turn on the key's mapping, if it still names `session_id`: queued
        when called (core/storage/queued.py)."""
        ...

    async def delete(self, principal: str, context_id: str, session_id: str) -> bool:
        """Remove the mapping only if it still names `session_id`; True when removed."""
        ...

    async def expire_many(
        self, records: list[SessionRecord], expired_at: datetime
    ) -> list[SessionRecord]:
        """`delete` for each record, in one go, leaving a tombstone (stamped `expired_at`) for
        each key removed, so the next turn there can still learn its session expired; returns
        the ones removed."""
        ...

    async def take_tombstone(self, principal: str, context_id: str) -> bool:
        """Remove the key's tombstone; True when there was one (its session expired unseen)."""
        ...

    async def purge_tombstones(self, expired_before: datetime) -> int:
        """Forget tombstones stamped before `expired_before`; returns how many."""
        ...

    async def created_before(self, cutoff: datetime) -> list[SessionRecord]:
        """Every mapping created before `cutoff` (the sweep's candidates)."""
        ...

    async def count(self) -> int: ...


# ----- workspaces: where each context's agent works (core/workspaces) ------------------------
@dataclass(frozen=True)
class WorkspaceRecord:
    """Where a context's agent works (core/workspaces): a git worktree of the working
    directory's repository, or a private copy with its own git directory (`git_dir`)."""

    principal: str
    context_id: str
    mode: str
    path: str
    branch: str
    base: str
    created_at: datetime
    git_dir: str | None = None


class WorkspaceStore(Protocol):
    """Workspace records keyed by (principal, context_id); one workspace per key."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def get(self, principal: str, context_id: str) -> WorkspaceRecord | None:
        """The context's workspace, if it has one."""
        ...

    async def put(self, record: WorkspaceRecord) -> None:
        """Insert or replace the workspace of the record's key."""
        ...

    async def delete(self, principal: str, context_id: str) -> None:
        """Forget the key's workspace; a missing one is not an error."""
        ...

    async def all(self) -> list[WorkspaceRecord]:
        """Every principal's workspaces, oldest first (the `workspaces` command, the
        maxWorkspaces count). Records that cannot be decoded are left out."""
        ...


# ----- push: configs and the delivery outbox ------------------------------------------------

PushVersion = Literal["1.0", "0.3"]


@dataclass(frozen=True)
class StoredConfig:
    principal: str
    version: PushVersion
    config: TaskPushNotificationConfig  # `id` and `task_id` always set

    @property
    def task_id(self) -> str:
        return self.config.task_id or ""

    @property
    def id(self) -> str:
        return self.config.id or ""


@dataclass(frozen=True)
class Delivery:
    """One notification for one webhook: the body is final, the target a copy of the config
    as it was when the event happened (deleting the config later does not recall it)."""

    seq: int
    principal: str
    version: PushVersion
    config: TaskPushNotificationConfig
    body: str
    attempts: int = 0

    @property
    def lane(self) -> tuple[str, str]:
        """Deliveries of one lane go out one at a time, in `seq` order."""
        return (self.config.task_id or "", self.config.id or "")


class PushStore(Protocol):
    """Push configs and the delivery outbox. Configs are scoped by principal and keep the
    protocol version that registered them (it decides the body each webhook receives). The
    outbox holds one row per (event, config) until it is delivered or given up; rows come
    back in `seq` order, the order they were added, so a restart resumes every webhook where
    it stopped."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def put_config(self, stored: StoredConfig) -> None:
        """Insert, or replace the config with the same (principal, task, id)."""

    async def get_config(
        self, principal: str, task_id: str, config_id: str
    ) -> StoredConfig | None: ...

    async def list_configs(self, principal: str, task_id: str) -> list[StoredConfig]:
        """The task's configs in creation order."""

    async def delete_config(self, principal: str, task_id: str, config_id: str) -> None:
        """Remove one config; a missing one is not an error."""

    async def delete_task_configs(self, principal: str, task_id: str) -> None: ...

    async def watched_tasks(self) -> set[str]:
        """Ids of the tasks that have at least one config."""

    async def add_deliveries(self, deliveries: list[Delivery]) -> list[Delivery]:
        """Append to the outbox (the given `seq` is ignored); returns the rows with theirs."""

    async def pending(self) -> list[Delivery]:
        """Every row still in the outbox, oldest first."""

    async def record_attempt(self, seq: int, attempts: int) -> None: ...

    async def remove_delivery(self, seq: int) -> None: ...


# ----- usage: one row per turn ----------------------------------------------------------------


@dataclass(frozen=True)
class TurnUsage:
    """What one turn used. `input_tokens` counts the cache reads and creations too (they are
    its breakdown); `at` is the turn's end, in seconds since the epoch."""

    task_id: str
    principal: str
    context_id: str
    at: float
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0
    cost_usd: float = 0.0
    model: str | None = None

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class UsageStore(Protocol):
    """One row per turn (tokens, cost, when, whose). Budgets add the rows up at start; a row
    that cannot be decoded is skipped and reported, never fatal."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def add(self, usage: TurnUsage) -> Queued[None]:
        """Keep one turn's usage (queued when called, see core/storage/queued.py)."""
        ...

    async def load(self) -> list[TurnUsage]:
        """Every readable row, oldest first."""
        ...
