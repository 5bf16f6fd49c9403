"""The ledger: what a job has done, in SQLite, so a job can be resumed after any crash.

Four tables: `jobs` (one row per job: plan digest, input, contextId), `steps` (one row per job
and step: state, rounds) and `runs` (one row per remote task a step sent: agent, messageId,
contextId, taskId, state, artifacts, usage), plus `sent_changes` (which patches a run's message
carried, see examples/crew/changes.py). A run row is written *before* its message is sent
(state `sending`), and its taskId the moment the agent reports it, so a re-run of the job knows
every remote task it started: finished ones are not redone, running ones are followed, and a
message whose task id never came back is looked up by its messageId before it is sent again.

Writes are synchronous and committed one by one: each is small, and a write must be on disk
before the next network call it protects.
"""

from __future__ import annotations

import json
import sqlite3
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    job_id      TEXT PRIMARY KEY,
    plan_name   TEXT NOT NULL,
    plan_digest TEXT NOT NULL,
    input       TEXT NOT NULL,
    context_id  TEXT NOT NULL,
    state       TEXT NOT NULL,
    created_at  TEXT NOT NULL,
    updated_at  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS steps (
    job_id     TEXT NOT NULL,
    step_id    TEXT NOT NULL,
    agent      TEXT NOT NULL,
    state      TEXT NOT NULL,
    context_id TEXT,
    rounds     INTEGER NOT NULL DEFAULT 0,
    detail     TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (job_id, step_id)
);
CREATE TABLE IF NOT EXISTS runs (
    job_id      TEXT NOT NULL,
    step_id     TEXT NOT NULL,
    attempt     INTEGER NOT NULL,
    round       INTEGER NOT NULL,
    agent       TEXT NOT NULL,
    message_id  TEXT NOT NULL,
    context_id  TEXT NOT NULL,
    task_id     TEXT,
    state       TEXT NOT NULL,
    detail      TEXT,
    artifacts   TEXT NOT NULL DEFAULT '[]',
    output_text TEXT,
    output_data TEXT,
    usage       TEXT NOT NULL DEFAULT '{}',
    backend     TEXT,
    via         TEXT,
    answers     INTEGER NOT NULL DEFAULT 0,
    started_at  TEXT NOT NULL,
    ended_at    TEXT,
    asked_at    TEXT,
    card        TEXT,
    PRIMARY KEY (job_id, step_id, attempt)
);
CREATE TABLE IF NOT EXISTS sent_changes (
    job_id  TEXT NOT NULL,
    step_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    source  TEXT NOT NULL,
    PRIMARY KEY (job_id, step_id, attempt, source)
);
CREATE TABLE IF NOT EXISTS agent_tasks (
    task_id    TEXT PRIMARY KEY,
    job_id     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
"""
# Columns added after the first release, with their definitions: an older ledger gets them.
ADDED_COLUMNS = {"runs": {"asked_at": "TEXT", "card": "TEXT"}}
# What an agent's record counts: a run that ended `done` is a success; one that ended in a
# state of its own making a failure; open runs, cancels by the crew (an abort) and expired
# questions (nobody answered) count for neither.
AGENT_FAILURES = frozenset({"failed", "rejected", "timeout", "invalid", "lost"})

# Run states. `sending`: written before the message goes out. Then the remote task's own state
# (`submitted`, `working`, `input-required`, `auth-required`, `completed` only transiently,
# `failed`, `rejected`, `canceled`), or what the orchestrator concluded: `done` (completed and
# valid), `invalid` (completed, but the artifact failed the schema), `timeout` (past its
# deadline, canceled on the agent), `lost` (the agent stopped answering; the task may live on),
# `expired` (its question went unanswered past the step's answerDeadline; canceled on the agent).
# `asked_at` is when the task's current question was first seen (reset by an answer).
OPEN_RUN_STATES = frozenset(
    {"sending", "submitted", "working", "input-required", "auth-required", "lost", "completed"}
)


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class JobRow:
    job_id: str
    plan_name: str
    plan_digest: str
    input: str
    context_id: str
    state: str
    created_at: str
    updated_at: str


@dataclass(frozen=True)
class StepRow:
    job_id: str
    step_id: str
    agent: str
    state: str
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
    state: str
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
    asked_at: str | None = None
    card: str | None = None  # the card URL of the agent the run was sent to

    @property
    def open(self) -> bool:
        return self.state in OPEN_RUN_STATES


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


def _seconds(start: str, end: str) -> float:
    return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()


def _run(row: sqlite3.Row) -> RunRow:
    values = dict(row)
    values["artifacts"] = json.loads(values["artifacts"])
    values["usage"] = json.loads(values["usage"])
    data = values["output_data"]
    values["output_data"] = None if data is None else json.loads(data)
    return RunRow(**values)


class Ledger:
    """One SQLite file; safe to share between jobs (every row carries its job id)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(SCHEMA)
        for table, columns in ADDED_COLUMNS.items():
            have = {r["name"] for r in self._db.execute(f"PRAGMA table_info({table})")}
            for name, kind in columns.items():
                if name not in have:
                    self._db.execute(f"ALTER TABLE {table} ADD COLUMN {name} {kind}")

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield self._db
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    # ----- jobs --------------------------------------------------------------------------------

    def job(self, job_id: str) -> JobRow | None:
        row = self._db.execute("SELECT * FROM jobs WHERE job_id = ?", (job_id,)).fetchone()
        return None if row is None else JobRow(**dict(row))

    def create_job(
        self, job_id: str, plan_name: str, digest: str, job_input: str, context_id: str
    ) -> JobRow:
        stamp = now()
        with self._tx() as db:
            db.execute(
                "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, 'running', ?, ?)",
                (job_id, plan_name, digest, job_input, context_id, stamp, stamp),
            )
        return JobRow(job_id, plan_name, digest, job_input, context_id, "running", stamp, stamp)

    def set_job_state(self, job_id: str, state: str) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE jobs SET state = ?, updated_at = ? WHERE job_id = ?",
                (state, now(), job_id),
            )

    def bind_task(self, task_id: str, job_id: str) -> None:
        """The crew agent's task `task_id` (its caller's) belongs to job `job_id`."""
        with self._tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO agent_tasks VALUES (?, ?, ?)", (task_id, job_id, now())
            )

    def job_of_task(self, task_id: str) -> str | None:
        row = self._db.execute(
            "SELECT job_id FROM agent_tasks WHERE task_id = ?", (task_id,)
        ).fetchone()
        return None if row is None else str(row["job_id"])

    # ----- steps -------------------------------------------------------------------------------

    def steps(self, job_id: str) -> dict[str, StepRow]:
        rows = self._db.execute("SELECT * FROM steps WHERE job_id = ?", (job_id,)).fetchall()
        return {r["step_id"]: StepRow(**dict(r)) for r in rows}

    def set_step(
        self,
        job_id: str,
        step_id: str,
        *,
        agent: str,
        state: str,
        detail: str | None = None,
        rounds: int | None = None,
        context_id: str | None = None,
    ) -> None:
        with self._tx() as db:
            db.execute(
                "INSERT INTO steps (job_id, step_id, agent, state, context_id, rounds, detail,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (job_id, step_id) DO UPDATE SET agent = excluded.agent,"
                " state = excluded.state, detail = excluded.detail,"
                " rounds = COALESCE(?, steps.rounds),"
                " context_id = COALESCE(steps.context_id, excluded.context_id),"
                " updated_at = excluded.updated_at",
                (job_id, step_id, agent, state, context_id, rounds or 0, detail, now(), rounds),
            )

    # ----- runs --------------------------------------------------------------------------------

    def runs(self, job_id: str, step_id: str | None = None) -> list[RunRow]:
        if step_id is None:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE job_id = ? ORDER BY started_at, step_id, attempt",
                (job_id,),
            ).fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM runs WHERE job_id = ? AND step_id = ? ORDER BY attempt",
                (job_id, step_id),
            ).fetchall()
        return [_run(r) for r in rows]

    def new_run(
        self,
        job_id: str,
        step_id: str,
        *,
        round_: int,
        agent: str,
        context_id: str,
        card: str | None = None,
    ) -> RunRow:
        """A new attempt, numbered after every earlier one of the step (across rounds and
        invocations), so its messageId `<job>:<step>:<attempt>` is never reused."""
        with self._tx() as db:
            (last,) = db.execute(
                "SELECT COALESCE(MAX(attempt), 0) FROM runs WHERE job_id = ? AND step_id = ?",
                (job_id, step_id),
            ).fetchone()
            attempt = int(last) + 1
            db.execute(
                "INSERT INTO runs (job_id, step_id, attempt, round, agent, message_id, context_id,"
                " state, started_at, card) VALUES (?, ?, ?, ?, ?, ?, ?, 'sending', ?, ?)",
                (
                    job_id,
                    step_id,
                    attempt,
                    round_,
                    agent,
                    f"{job_id}:{step_id}:{attempt}",
                    context_id,
                    now(),
                    card,
                ),
            )
        return self.run(job_id, step_id, attempt)

    def agent_record(self, card: str) -> AgentRecord:
        """An agent's record over every job of this ledger (by card URL)."""
        rows = self._db.execute(
            "SELECT state, started_at, ended_at FROM runs WHERE card = ?", (card,)
        ).fetchall()
        latencies = sorted(
            _seconds(r["started_at"], r["ended_at"])
            for r in rows
            if r["state"] == "done" and r["ended_at"]
        )
        failed = sum(1 for r in rows if r["state"] in AGENT_FAILURES)
        return AgentRecord(len(latencies), failed, tuple(latencies))

    def run(self, job_id: str, step_id: str, attempt: int) -> RunRow:
        row = self._db.execute(
            "SELECT * FROM runs WHERE job_id = ? AND step_id = ? AND attempt = ?",
            (job_id, step_id, attempt),
        ).fetchone()
        if row is None:
            raise LookupError(f"no run {job_id}:{step_id}:{attempt}")
        return _run(row)

    def update_run(self, run: RunRow, **changes: Any) -> RunRow:
        """Set some columns of a run (json columns take Python values) and return it anew."""
        encoded = dict(changes)
        for key in ("artifacts", "usage"):
            if key in encoded:
                encoded[key] = json.dumps(encoded[key])
        if "output_data" in encoded and encoded["output_data"] is not None:
            encoded["output_data"] = json.dumps(encoded["output_data"])
        columns = ", ".join(f"{k} = ?" for k in encoded)
        with self._tx() as db:
            db.execute(
                f"UPDATE runs SET {columns} WHERE job_id = ? AND step_id = ? AND attempt = ?",  # noqa: S608 - column names are ours
                (*encoded.values(), run.job_id, run.step_id, run.attempt),
            )
        return self.run(run.job_id, run.step_id, run.attempt)

    # ----- patches sent on (applyChanges) --------------------------------------------------------

    def mark_sent(self, run: RunRow, sources: list[str]) -> None:
        """Record, before the message goes out, which patches (`<step>:<attempt>` of the runs
        that made them) it carries."""
        with self._tx() as db:
            db.executemany(
                "INSERT OR IGNORE INTO sent_changes VALUES (?, ?, ?, ?)",
                [(run.job_id, run.step_id, run.attempt, s) for s in sources],
            )

    def sent(self, job_id: str) -> dict[tuple[str, int], set[str]]:
        """Per run (step, attempt): the patches its message carried."""
        found: dict[tuple[str, int], set[str]] = {}
        for row in self._db.execute(
            "SELECT step_id, attempt, source FROM sent_changes WHERE job_id = ?", (job_id,)
        ):
            found.setdefault((row["step_id"], row["attempt"]), set()).add(row["source"])
        return found
