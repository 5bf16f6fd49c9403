"""The ledger: what a job has done, in SQLite, so a job can be resumed after any crash.

Tables (examples/crew/ledger/schema.py): `jobs` (plan digest, input, contextId, state),
`steps` (one row per job and step: state, rounds), `runs` (one row per remote task a step
sent: agent, messageId, contextId, taskId, state, artifacts, usage), `sent_changes` (which
patches a run's message carried) and `agent_tasks` (a served crew's tasks -> jobs). A run row is
written *before* its message is sent (`SENDING`), and its taskId the moment the agent reports
it, so a re-run knows every remote task it started: finished ones are not redone, running ones
are followed, and a message whose task id never came back is looked up before it is sent again.

Contract:
- The ledger is the one owner of job, step and run states: every change goes through it and is
  checked against examples/crew/ledger/states.py's tables, inside the write's own transaction.
- Every call runs on the daemon's SQLite layer (one connection on a worker thread, group
  commit): awaiting a ledger call never blocks the event loop, so a crew served by our daemon
  leaves it free. Each write is committed before the call returns.
- `listen` hands every step state change, as written, to the job's observers (the live view).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

from examples.crew.daemon import SqliteDatabase
from examples.crew.ledger.schema import (
    AgentRecord,
    JobRow,
    LedgerError,
    RunRow,
    StepRow,
    job_row,
    migrate,
    now,
    run_row,
    seconds_between,
    step_row,
)
from examples.crew.ledger.states import (
    AGENT_FAILURES,
    JobState,
    RunState,
    StepState,
    check_job,
    check_run,
    check_step,
)

T = TypeVar("T")
StepListener = Callable[[str, str, StepState, str | None], None]  # job, step, state, detail

__all__ = ["AgentRecord", "JobRow", "Ledger", "LedgerError", "RunRow", "StepRow", "now"]


def _select(conn: sqlite3.Connection, sql: str, params: Iterable[object] = ()) -> list[sqlite3.Row]:
    cursor = conn.cursor()
    cursor.row_factory = sqlite3.Row
    return cursor.execute(sql, tuple(params)).fetchall()


def _one_run(conn: sqlite3.Connection, job_id: str, step_id: str, attempt: int) -> RunRow:
    rows = _select(
        conn,
        "SELECT * FROM runs WHERE job_id = ? AND step_id = ? AND attempt = ?",
        (job_id, step_id, attempt),
    )
    if not rows:
        raise LookupError(f"no run {job_id}:{step_id}:{attempt}")
    return run_row(rows[0])


class Ledger:
    """One SQLite file; safe to share between jobs (every row carries its job id). Open it
    with `async with Ledger.opened(path) as ledger` (or `open()` / `close()`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = SqliteDatabase(path, name="crew ledger")
        self._listeners: dict[str, list[StepListener]] = {}

    async def open(self) -> None:
        """Open the file and migrate it; LedgerError (naming the file) when it cannot be the
        ledger: another program's database, not a database, or a newer crew's ledger."""
        try:
            await self._db.open()
        except sqlite3.DatabaseError as exc:
            raise LedgerError(f"the ledger {self.path}: it is not an SQLite database") from exc
        try:
            await self._db.run(migrate)
        except LedgerError as exc:
            await self._db.close()
            raise type(exc)(f"the ledger {self.path}: {exc}") from exc
        except BaseException:
            await self._db.close()
            raise

    async def close(self) -> None:
        await self._db.close()

    @classmethod
    @asynccontextmanager
    async def opened(cls, path: Path) -> AsyncIterator[Ledger]:
        ledger = cls(path)
        await ledger.open()
        try:
            yield ledger
        finally:
            await ledger.close()

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self._db.run(fn)

    # ----- jobs --------------------------------------------------------------------------------

    async def job(self, job_id: str) -> JobRow | None:
        rows = await self._run(
            lambda c: _select(c, "SELECT * FROM jobs WHERE job_id = ?", [job_id])
        )
        return job_row(rows[0]) if rows else None

    async def create_job(
        self, job_id: str, plan_name: str, digest: str, job_input: str, context_id: str
    ) -> JobRow:
        stamp = now()
        row = JobRow(
            job_id, plan_name, digest, job_input, context_id, JobState.RUNNING, stamp, stamp
        )

        def insert(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT INTO jobs VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, plan_name, digest, job_input, context_id, row.state, stamp, stamp),
            )

        await self._run(insert)
        return row

    async def set_job_state(self, job_id: str, state: JobState) -> None:
        def update(conn: sqlite3.Connection) -> None:
            [old] = _select(conn, "SELECT state FROM jobs WHERE job_id = ?", [job_id])
            check_job(JobState(old["state"]), state, f"job {job_id}")
            conn.execute(
                "UPDATE jobs SET state = ?, updated_at = ? WHERE job_id = ?",
                (state, now(), job_id),
            )

        await self._run(update)

    async def bind_task(self, task_id: str, job_id: str) -> None:
        """The crew agent's task `task_id` (its caller's) belongs to job `job_id`."""
        await self._run(
            lambda c: c.execute(
                "INSERT OR IGNORE INTO agent_tasks VALUES (?, ?, ?)", (task_id, job_id, now())
            )
        )

    async def job_of_task(self, task_id: str) -> str | None:
        rows = await self._run(
            lambda c: _select(c, "SELECT job_id FROM agent_tasks WHERE task_id = ?", [task_id])
        )
        return str(rows[0]["job_id"]) if rows else None

    # ----- steps -------------------------------------------------------------------------------

    def listen(self, job_id: str, listener: StepListener) -> Callable[[], None]:
        """Call `listener` after every step state change of the job; returns the unsubscribe."""
        self._listeners.setdefault(job_id, []).append(listener)

        def stop() -> None:
            self._listeners.get(job_id, []).remove(listener)

        return stop

    async def steps(self, job_id: str) -> dict[str, StepRow]:
        rows = await self._run(
            lambda c: _select(c, "SELECT * FROM steps WHERE job_id = ?", [job_id])
        )
        return {r["step_id"]: step_row(r) for r in rows}

    async def set_step(
        self,
        job_id: str,
        step_id: str,
        *,
        agent: str,
        state: StepState,
        detail: str | None = None,
        rounds: int | None = None,
        context_id: str | None = None,
    ) -> None:
        """Move a step to `state` (a legal change from its stored state; a step without a row
        is PENDING); `rounds` and `context_id` are kept when not given."""

        def write(conn: sqlite3.Connection) -> None:
            old = _select(
                conn, "SELECT state FROM steps WHERE job_id = ? AND step_id = ?", (job_id, step_id)
            )
            before = StepState(old[0]["state"]) if old else StepState.PENDING
            check_step(before, state, f"step {step_id} of job {job_id}")
            conn.execute(
                "INSERT INTO steps (job_id, step_id, agent, state, context_id, rounds, detail,"
                " updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (job_id, step_id) DO UPDATE SET agent = excluded.agent,"
                " state = excluded.state, detail = excluded.detail,"
                " rounds = COALESCE(?, steps.rounds),"
                " context_id = COALESCE(steps.context_id, excluded.context_id),"
                " updated_at = excluded.updated_at",
                (job_id, step_id, agent, state, context_id, rounds or 0, detail, now(), rounds),
            )

        await self._run(write)
        for listener in list(self._listeners.get(job_id, [])):
            listener(job_id, step_id, state, detail)

    async def set_rounds(self, job_id: str, step_id: str, rounds: int) -> None:
        """A round of the step is done (its state does not change)."""
        await self._run(
            lambda c: c.execute(
                "UPDATE steps SET rounds = ?, updated_at = ? WHERE job_id = ? AND step_id = ?",
                (rounds, now(), job_id, step_id),
            )
        )

    # ----- runs --------------------------------------------------------------------------------

    async def runs(self, job_id: str, step_id: str | None = None) -> list[RunRow]:
        if step_id is None:
            sql = "SELECT * FROM runs WHERE job_id = ? ORDER BY started_at, step_id, attempt"
            params: tuple[str, ...] = (job_id,)
        else:
            sql = "SELECT * FROM runs WHERE job_id = ? AND step_id = ? ORDER BY attempt"
            params = (job_id, step_id)
        rows = await self._run(lambda c: _select(c, sql, params))
        return [run_row(r) for r in rows]

    async def new_run(
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

        def insert(conn: sqlite3.Connection) -> RunRow:
            (last,) = conn.execute(
                "SELECT COALESCE(MAX(attempt), 0) FROM runs WHERE job_id = ? AND step_id = ?",
                (job_id, step_id),
            ).fetchone()
            attempt = int(last) + 1
            conn.execute(
                "INSERT INTO runs (job_id, step_id, attempt, round, agent, message_id, context_id,"
                " state, started_at, card) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job_id,
                    step_id,
                    attempt,
                    round_,
                    agent,
                    f"{job_id}:{step_id}:{attempt}",
                    context_id,
                    RunState.SENDING,
                    now(),
                    card,
                ),
            )
            return _one_run(conn, job_id, step_id, attempt)

        return await self._run(insert)

    async def run(self, job_id: str, step_id: str, attempt: int) -> RunRow:
        return await self._run(lambda c: _one_run(c, job_id, step_id, attempt))

    async def update_run(self, run: RunRow, **changes: Any) -> RunRow:
        """Set some columns of a run (json columns take Python values; a new `state` must be
        a legal change from the stored one) and return it anew."""
        encoded = dict(changes)
        for column in ("artifacts", "usage"):
            if column in encoded:
                encoded[column] = json.dumps(encoded[column])
        if "output_data" in encoded and encoded["output_data"] is not None:
            encoded["output_data"] = json.dumps(encoded["output_data"])
        columns = ", ".join(f"{k} = ?" for k in encoded)
        key = (run.job_id, run.step_id, run.attempt)

        def write(conn: sqlite3.Connection) -> RunRow:
            if "state" in changes:
                stored = _one_run(conn, *key)
                check_run(stored.state, RunState(changes["state"]), f"run {stored.message_id}")
            conn.execute(
                f"UPDATE runs SET {columns} WHERE job_id = ? AND step_id = ? AND attempt = ?",  # noqa: S608 - column names are ours
                (*encoded.values(), *key),
            )
            return _one_run(conn, *key)

        return await self._run(write)

    async def agent_record(self, card: str) -> AgentRecord:
        """An agent's record over every job of this ledger (by card URL)."""
        rows = await self._run(
            lambda c: _select(
                c, "SELECT state, started_at, ended_at FROM runs WHERE card = ?", [card]
            )
        )
        latencies = sorted(
            seconds_between(r["started_at"], r["ended_at"])
            for r in rows
            if r["state"] == RunState.DONE and r["ended_at"]
        )
        failed = sum(1 for r in rows if r["state"] in AGENT_FAILURES)
        return AgentRecord(len(latencies), failed, tuple(latencies))

    # ----- patches sent on (applyChanges) --------------------------------------------------------

    async def mark_sent(self, run: RunRow, sources: list[str]) -> None:
        """Record, before the message goes out, which patches (`<step>:<attempt>` of the runs
        that made them) it carries."""
        values = [(run.job_id, run.step_id, run.attempt, s) for s in sources]
        await self._run(
            lambda c: c.executemany(
                "INSERT OR IGNORE INTO sent_changes VALUES (?, ?, ?, ?)", values
            )
        )

    async def sent(self, job_id: str) -> dict[tuple[str, int], set[str]]:
        """Per run (step, attempt): the patches its message carried."""
        rows = await self._run(
            lambda c: _select(
                c, "SELECT step_id, attempt, source FROM sent_changes WHERE job_id = ?", [job_id]
            )
        )
        found: dict[tuple[str, int], set[str]] = {}
        for row in rows:
            found.setdefault((row["step_id"], row["attempt"]), set()).add(row["source"])
        return found
