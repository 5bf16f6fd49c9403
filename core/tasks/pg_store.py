"""PostgreSQL task store: the `tasks` table of the replicas' shared database (core/pg_db.py).

Same contract and columns as the SQLite store (the `body` column holds the task, the others
index it; a body that cannot be read is skipped by listings and answers
`TaskUnreadableError` to a read), plus `replica`: the replica that wrote the task last, which
is the one running it. `fail_unfinished` fails only the tasks of replicas whose lease has
expired (or that stopped), never a live replica's: a replica starting, or the failover check,
takes over what a lost replica left.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from core.pg_db import Conn, PostgresStore, count_of, exclusively
from core.queued import Queued
from core.tasks.store import (
    ACTIVE_STATES,
    TaskPage,
    TaskQuery,
    cursor_of,
    decode_cursor,
    decode_task,
    failed_by_restart,
    sort_key,
    unreadable_task,
)
from core.wire.base import format_timestamp
from core.wire.enums import TaskState
from core.wire.models import Task

_TERMINAL = [s.value for s in TaskState if s.terminal]
_ACTIVE = [s.value for s in ACTIVE_STATES]


class PostgresTaskStore(PostgresStore):
    async def probe(self) -> None:
        # A write that takes a row lock and leaves nothing behind.
        await self._db.execute("DELETE FROM tasks WHERE principal = '' AND id = ''")

    def save(self, principal: str, task: Task) -> Queued[None]:
        return self._save(principal, task)

    async def _save(self, principal: str, task: Task) -> None:
        await self._db.execute(
            "INSERT INTO tasks (principal, id, context_id, state, status_ts, body, replica) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (principal, id) DO UPDATE SET "
            "context_id = EXCLUDED.context_id, state = EXCLUDED.state, "
            "status_ts = EXCLUDED.status_ts, body = EXCLUDED.body, replica = EXCLUDED.replica",
            principal,
            task.id,
            task.context_id,
            task.status.state.value,
            sort_key(task)[0],
            task.model_dump_json(by_alias=True, exclude_none=True),
            self._db.replica_id,
        )

    def _read(self, principal: str, task_id: object, body: object) -> Task | None:
        return decode_task(self._db.unreadable, principal, task_id, body)

    async def get(self, principal: str, task_id: str) -> Task | None:
        body = await self._db.fetchval(
            "SELECT body FROM tasks WHERE principal = $1 AND id = $2", principal, task_id
        )
        if body is None:
            return None
        task = self._read(principal, task_id, body)
        if task is None:
            raise unreadable_task(task_id)
        return task

    async def delete(self, principal: str, task_id: str) -> None:
        await self._db.execute(
            "DELETE FROM tasks WHERE principal = $1 AND id = $2", principal, task_id
        )

    async def list(self, principal: str, query: TaskQuery) -> TaskPage:
        where = ["principal = $1"]
        args: list[object] = [principal]

        def arg(value: object) -> str:
            args.append(value)
            return f"${len(args)}"

        if query.context_id is not None:
            where.append(f"context_id = {arg(query.context_id)}")
        if query.state is not None:
            where.append(f"state = {arg(query.state.value)}")
        if query.status_after is not None:
            where.append(f"status_ts >= {arg(format_timestamp(query.status_after))}")
        filters = " AND ".join(where)
        total_args = list(args)
        page_where = filters
        if query.page_token:
            ts, last_id = decode_cursor(query.page_token)
            at, before = arg(ts), arg(last_id)
            page_where += f" AND (status_ts < {at} OR (status_ts = {at} AND id < {before}))"
        limit = arg(query.page_size + 1)

        async def read(conn: Conn) -> tuple[int, list[asyncpg.Record]]:
            total = await conn.fetchval(
                f"SELECT COUNT(*) FROM tasks WHERE {filters}",  # noqa: S608 - only fixed clauses are interpolated
                *total_args,
            )
            rows = await conn.fetch(
                f"SELECT status_ts, id, body FROM tasks WHERE {page_where} "  # noqa: S608 - only fixed clauses are interpolated
                f"ORDER BY status_ts DESC, id DESC LIMIT {limit}",
                *args,
            )
            return int(total), rows

        total, rows = await self._db.run(read)
        page = rows[: query.page_size]
        tasks = [t for r in page if (t := self._read(principal, r["id"], r["body"])) is not None]
        # The cursor comes from the index columns, so paging passes unreadable rows too.
        more = len(rows) > len(page)
        token = cursor_of(page[-1]["status_ts"], page[-1]["id"]) if more else ""
        return TaskPage(tasks, token, total)

    async def fail_unfinished(self, reason: str) -> int:
        """Fail the SUBMITTED/WORKING tasks of every replica that is no longer live (its lease
        expired, or it is gone); a live replica's tasks are left alone. One replica at a time
        does it; a row another replica is writing now is left for the next check."""

        async def reconcile(conn: Conn) -> int:
            rows = await conn.fetch(
                "SELECT principal, id, body FROM tasks WHERE state = ANY($1::text[]) "
                "AND replica NOT IN (SELECT id FROM replicas WHERE expires_at > now()) "
                "FOR UPDATE SKIP LOCKED",
                _ACTIVE,
            )
            for row in rows:
                stored = self._read(row["principal"], row["id"], row["body"])
                if stored is None:
                    await conn.execute(
                        "UPDATE tasks SET state = $1 WHERE principal = $2 AND id = $3",
                        TaskState.FAILED.value,
                        row["principal"],
                        row["id"],
                    )
                    continue
                task = failed_by_restart(stored, reason)
                await conn.execute(
                    "UPDATE tasks SET state = $1, status_ts = $2, body = $3 "
                    "WHERE principal = $4 AND id = $5",
                    task.status.state.value,
                    sort_key(task)[0],
                    task.model_dump_json(by_alias=True, exclude_none=True),
                    row["principal"],
                    row["id"],
                )
            return len(rows)

        return await self._db.run(reconcile)

    async def purge_terminal(self, before: datetime) -> int:
        """One replica at a time (the others return 0 at once)."""
        cutoff = format_timestamp(before)

        async def purge(conn: Conn) -> int:
            async def delete() -> int:
                status = await conn.execute(
                    "DELETE FROM tasks WHERE state = ANY($1::text[]) AND status_ts < $2",
                    _TERMINAL,
                    cutoff,
                )
                return count_of(status)

            return await exclusively(conn, "tasks.purge", delete, 0)

        return await self._db.run(purge)
