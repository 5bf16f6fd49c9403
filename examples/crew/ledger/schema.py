"""The ledger's tables, as numbered migrations in the daemon's style (core's PostgreSQL schema):
applied in order, each once, recorded in `schema_migrations`; a ledger written by a newer crew
than this one is refused rather than misread. A migration is never edited once released: a
change is a new one appended to `MIGRATIONS`. And the rows, as typed, frozen records.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from examples.crew.ledger.states import OPEN_RUNS, JobState, RunState, StepState


class LedgerError(RuntimeError):
    """The ledger file cannot be used; the message says why (one line, for the person)."""


class LedgerTooNewError(LedgerError):
    """The ledger was migrated by a newer crew than this one."""


class ForeignLedgerError(LedgerError):
    """The file is another program's database (or not a database): nothing is written to it."""


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    apply: Callable[[sqlite3.Connection], None]


_FIRST = (
    """CREATE TABLE IF NOT EXISTS jobs (
        job_id TEXT PRIMARY KEY, plan_name TEXT NOT NULL, plan_digest TEXT NOT NULL,
        input TEXT NOT NULL, context_id TEXT NOT NULL, state TEXT NOT NULL,
        created_at TEXT NOT NULL, updated_at TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS steps (
        job_id TEXT NOT NULL, step_id TEXT NOT NULL, agent TEXT NOT NULL, state TEXT NOT NULL,
        context_id TEXT, rounds INTEGER NOT NULL DEFAULT 0, detail TEXT,
        updated_at TEXT NOT NULL, PRIMARY KEY (job_id, step_id))""",
    """CREATE TABLE IF NOT EXISTS runs (
        job_id TEXT NOT NULL, step_id TEXT NOT NULL, attempt INTEGER NOT NULL,
        round INTEGER NOT NULL, agent TEXT NOT NULL, message_id TEXT NOT NULL,
        context_id TEXT NOT NULL, task_id TEXT, state TEXT NOT NULL, detail TEXT,
        artifacts TEXT NOT NULL DEFAULT '[]', output_text TEXT, output_data TEXT,
        usage TEXT NOT NULL DEFAULT '{}', backend TEXT, via TEXT,
        answers INTEGER NOT NULL DEFAULT 0, started_at TEXT NOT NULL, ended_at TEXT,
        PRIMARY KEY (job_id, step_id, attempt))""",
    """CREATE TABLE IF NOT EXISTS sent_changes (
        job_id TEXT NOT NULL, step_id TEXT NOT NULL, attempt INTEGER NOT NULL,
        source TEXT NOT NULL, PRIMARY KEY (job_id, step_id, attempt, source))""",
    """CREATE TABLE IF NOT EXISTS agent_tasks (
        task_id TEXT PRIMARY KEY, job_id TEXT NOT NULL, created_at TEXT NOT NULL)""",
)


def _statements(*sql: str) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        for statement in sql:
            conn.execute(statement)

    return apply


def _column(table: str, name: str, kind: str) -> Callable[[sqlite3.Connection], None]:
    """Add a column; a ledger of the crew before migrations may have it already."""

    def apply(conn: sqlite3.Connection) -> None:
        have = {r[1] for r in conn.execute(f"PRAGMA table_info({table})")}
        if name not in have:
            conn.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    return apply


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "jobs, steps, runs, sent_changes, agent_tasks", _statements(*_FIRST)),
    Migration(
        2, "runs.asked_at: when a question was first seen", _column("runs", "asked_at", "TEXT")
    ),
    Migration(3, "runs.card: the card URL a run went to", _column("runs", "card", "TEXT")),
)
LATEST = MIGRATIONS[-1].version


def migrate(conn: sqlite3.Connection) -> list[int]:
    """Apply what the ledger lacks, in order, inside the caller's transaction (a failure
    applies none); the versions applied. LedgerTooNewError when it is ahead of this code."""
    try:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except sqlite3.DatabaseError as exc:
        raise ForeignLedgerError(f"it is not an SQLite database ({exc})") from exc
    if tables and not tables & {"schema_migrations", "jobs"}:
        raise ForeignLedgerError(
            f"it is another program's database (tables: {', '.join(sorted(tables)[:5])}); "
            "give --ledger a file of its own"
        )
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
        "name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    (current,) = conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations").fetchone()
    if current > LATEST:
        raise LedgerTooNewError(
            f"the ledger's schema is at version {current}, newer than this crew knows "
            f"({LATEST}): use a newer crew or another --ledger"
        )
    applied = []
    for migration in MIGRATIONS:
        if migration.version > current:
            migration.apply(conn)
            conn.execute(
                "INSERT INTO schema_migrations VALUES (?, ?, ?)",
                (migration.version, migration.name, now()),
            )
            applied.append(migration.version)
    return applied


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class JobRow:
    job_id: str
    plan_name: str
    plan_digest: str
    input: str
    context_id: str
    state: JobState
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class StepRow:
    job_id: str
    step_id: str
    agent: str
    state: StepState
    context_id: str | None
    rounds: int
    detail: str | None
    updated_at: str


@dataclass(frozen=True)
class RunRow:
    job_id: str
    step_id: str
    attempt: int
    round: int
    agent: str
    message_id: str
    context_id: str
    task_id: str | None
    state: RunState
    detail: str | None
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    output_text: str | None = None
    output_data: Any = None
    usage: dict[str, Any] = field(default_factory=dict)
    backend: str | None = None
    via: str | None = None
    answers: int = 0
    started_at: str = ""
    ended_at: str | None = None
    asked_at: str | None = None  # when the task's current question was first seen
    card: str | None = None  # the card URL of the agent the run was sent to

    @property
    def open(self) -> bool:
        return self.state in OPEN_RUNS


def job_row(row: sqlite3.Row) -> JobRow:
    values = dict(row)
    return JobRow(**{**values, "state": JobState(values["state"])})


def step_row(row: sqlite3.Row) -> StepRow:
    values = dict(row)
    return StepRow(**{**values, "state": StepState(values["state"])})


def run_row(row: sqlite3.Row) -> RunRow:
    values = dict(row)
    values["state"] = RunState(values["state"])
    values["artifacts"] = json.loads(values["artifacts"])
    values["usage"] = json.loads(values["usage"])
    data = values["output_data"]
    values["output_data"] = None if data is None else json.loads(data)
    return RunRow(**values)


@dataclass(frozen=True)
class AgentRecord:
    """How an agent did: tasks done, tasks failed (its own doing), latencies of the done."""

    done: int
    failed: int
    latencies: tuple[float, ...]

    @property
    def success_rate(self) -> float | None:
        total = self.done + self.failed
        return self.done / total if total else None

    def describe(self) -> str:
        rate = self.success_rate
        if rate is None:
            return "no finished tasks yet"
        text = f"{self.done}/{self.done + self.failed} tasks done ({rate:.0%})"
        if self.latencies:
            median = statistics.median(self.latencies)
            text += f", latency median {median:.1f} s, max {self.latencies[-1]:.1f} s"
        return text


def seconds_between(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
