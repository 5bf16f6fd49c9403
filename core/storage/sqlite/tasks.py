"""SQLite task store: one file, WAL journal, every call on a worker thread (`SqliteDatabase`).

The `body` column holds the task; the other columns index it. A body that cannot be read is
skipped by listings (paging goes on past it), answers `TaskUnreadableError` (a TaskNotFound)
to a read, and, if its task was running when a daemon stopped, is marked FAILED in the index
at the next start so retention removes it in time.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from datetime import datetime
from pathlib import Path

import anyio.to_thread

from core.storage.contracts import (
    ACTIVE_STATES,
    TERMINAL_STATES,
    StaleWriteError,
    TaskPage,
    TaskQuery,
)
from core.storage.queued import Queued
from core.storage.rows import (
    cursor_of,
    decode_cursor,
    decode_task,
    failed_by_restart,
    sort_key,
    unreadable_task,
)
from core.storage.sqlite.database import SqliteDatabase, SqliteStore
from core.wire.base import format_timestamp
from core.wire.enums import TaskState
from core.wire.models import Task

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tasks (
    principal TEXT NOT NULL,
    id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    state TEXT NOT NULL,
    status_ts TEXT NOT NULL,
    body TEXT NOT NULL,
    PRIMARY KEY (principal, id)
);
CREATE INDEX IF NOT EXISTS tasks_by_time ON tasks (principal, status_ts DESC, id DESC);
CREATE INDEX IF NOT EXISTS tasks_by_state ON tasks (state);
"""


# A terminal task never changes: its row is only ever rewritten with the same body.
_TERMINAL = [s.value for s in TERMINAL_STATES]
_TERMINAL_JSON = json.dumps(_TERMINAL)
_SAVE = (
    "INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (principal, id) DO UPDATE SET "
    "context_id = excluded.context_id, state = excluded.state, status_ts = excluded.status_ts, "
    "body = excluded.body WHERE tasks.state NOT IN (SELECT value FROM json_each(?)) "
    "OR tasks.body = excluded.body"
)

PROBE_BYTES = 4096


def _disk_takes_a_page(directory: Path) -> None:
    """Write one page to a new file next to the database, flush it to disk and drop it;
    OSError (ENOSPC when the disk is full) otherwise. A committed SQLite write alone can pass
    on a full disk while it lands in WAL space allocated earlier. The file is unnamed
    (O_TMPFILE where available), so nothing is left behind."""
    with tempfile.TemporaryFile(dir=directory, prefix=".ready-probe-") as probe:
        probe.write(b"\0" * PROBE_BYTES)
        probe.flush()
        os.fsync(probe.fileno())


class SqliteTaskStore(SqliteStore):
    SCHEMA = _SCHEMA
    NAME = "task store"

    def __init__(self, path: Path, *, db: SqliteDatabase | None = None) -> None:
        super().__init__(path, db=db)
        self._directory = path.parent

    async def probe(self) -> None:
        def write(conn: sqlite3.Connection) -> None:
            # Takes the write lock and leaves nothing behind.
            conn.execute("DELETE FROM tasks WHERE principal = '' AND id = ''")

        await self._db.run(write)
        await anyio.to_thread.run_sync(_disk_takes_a_page, self._directory)

    def save(self, principal: str, task: Task) -> Queued[None]:
        row = (
            principal,
            task.id,
            task.context_id,
            task.status.state.value,
            sort_key(task)[0],
            task.model_dump_json(by_alias=True, exclude_none=True),
        )

        def write(conn: sqlite3.Connection) -> None:
            written = conn.execute(_SAVE, (*row, _TERMINAL_JSON)).rowcount
            if not written:
                raise StaleWriteError

        return self._db.run(write, one_statement=True)

    def _read(self, principal: str, task_id: object, body: object) -> Task | None:
        return decode_task(self._db.unreadable, principal, task_id, body)

    async def get(self, principal: str, task_id: str) -> Task | None:
        row = await self._db.run(
            lambda c: c.execute(
                "SELECT body FROM tasks WHERE principal = ? AND id = ?", (principal, task_id)
            ).fetchone()
        )
        if row is None:
            return None
        task = self._read(principal, task_id, row[0])
        if task is None:
            raise unreadable_task(task_id)
        return task

    async def delete(self, principal: str, task_id: str) -> None:
        await self._db.run(
            lambda c: c.execute(
                "DELETE FROM tasks WHERE principal = ? AND id = ?", (principal, task_id)
            )
        )

    async def list(self, principal: str, query: TaskQuery) -> TaskPage:
        where = ["principal = ?"]
        args: list[object] = [principal]
        if query.context_id is not None:
            where.append("context_id = ?")
            args.append(query.context_id)
        if query.state is not None:
            where.append("state = ?")
            args.append(query.state.value)
        if query.status_after is not None:
            where.append("status_ts >= ?")
            args.append(format_timestamp(query.status_after))
        filters = " AND ".join(where)
        page_where, page_args = filters, list(args)
        if query.page_token:
            ts, task_id = decode_cursor(query.page_token)
            page_where += " AND (status_ts < ? OR (status_ts = ? AND id < ?))"
            page_args += [ts, ts, task_id]

        def read(c: sqlite3.Connection) -> tuple[int, list[tuple[object, object, object]]]:
            total = c.execute(f"SELECT COUNT(*) FROM tasks WHERE {filters}", args).fetchone()[0]  # noqa: S608 - only fixed clauses are interpolated
            rows = c.execute(
                f"SELECT status_ts, id, body FROM tasks WHERE {page_where} "  # noqa: S608 - only fixed clauses are interpolated
                "ORDER BY status_ts DESC, id DESC LIMIT ?",
                [*page_args, query.page_size + 1],
            ).fetchall()
            return total, rows

        total, rows = await self._db.run(read)
        page = rows[: query.page_size]
        tasks = [t for _, row_id, body in page if (t := self._read(principal, row_id, body))]
        # The cursor comes from the index columns, so paging passes unreadable rows too.
        token = cursor_of(str(page[-1][0]), str(page[-1][1])) if len(rows) > len(page) else ""
        return TaskPage(tasks, token, total)

    async def fail_unfinished(self, reason: str) -> int:
        states = [s.value for s in ACTIVE_STATES]

        def reconcile(c: sqlite3.Connection) -> int:
            rows = c.execute(
                "SELECT principal, id, body FROM tasks WHERE state IN (?, ?)", states
            ).fetchall()
            for principal, task_id, body in rows:
                stored = self._read(principal, task_id, body)
                if stored is None:
                    c.execute(
                        "UPDATE tasks SET state = ? WHERE principal = ? AND id = ?",
                        (TaskState.FAILED.value, principal, task_id),
                    )
                    continue
                task = failed_by_restart(stored, reason)
                c.execute(
                    "UPDATE tasks SET state = ?, status_ts = ?, body = ? "
                    "WHERE principal = ? AND id = ?",
                    (
                        task.status.state.value,
                        sort_key(task)[0],
                        task.model_dump_json(by_alias=True, exclude_none=True),
                        principal,
                        task_id,
                    ),
                )
            return len(rows)

        return await self._db.run(reconcile)

    async def purge_terminal(self, before: datetime) -> int:
        terminal = (
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED",
        )
        cutoff = format_timestamp(before)
        return await self._db.run(
            lambda c: (
                c.execute(
                    "DELETE FROM tasks WHERE state IN (?, ?, ?, ?) AND status_ts < ?",
                    (*terminal, cutoff),
                ).rowcount
            )
        )
