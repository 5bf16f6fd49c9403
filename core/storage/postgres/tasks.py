"""PostgreSQL task store: the `tasks` table of the replicas' shared database (database.py).

Same contract and columns as the SQLite store (the `body` column holds the task, the others
index it; a body that cannot be read is skipped by listings and answers
`TaskUnreadableError` to a read), plus `replica`: the replica that wrote the task last, which
is the one running it. `fail_unfinished` fails only the tasks of replicas whose lease has
expired (or that stopped), never a live replica's: a replica starting, or the failover check,
takes over what a lost replica left, and appends the FAILED status to the task's events
(`task_events`, announced on EVENTS_CHANNEL), so its watchers on other replicas see it end.
"""

from __future__ import annotations

from datetime import datetime

import asyncpg

from core.storage.contracts import ACTIVE_STATES, StaleWriteError, TaskPage, TaskQuery
from core.storage.postgres.database import Conn, PostgresStore, count_of, exclusively
from core.storage.queued import Queued
from core.storage.rows import (
    cursor_of,
    decode_cursor,
    decode_task,
    failed_by_restart,
    sort_key,
    unreadable_task,
)
from core.wire.base import format_timestamp
from core.wire.enums import TaskState
from core.wire.models import StreamResponse, Task, TaskStatusUpdateEvent

# NOTIFY channels: a task's new events (payload: its id) and cancels (payload: JSON).
EVENTS_CHANNEL = "a2a_events"
CANCEL_CHANNEL = "a2a_cancel"
# A turn queued for the replica that owns its context (payload: "<replica> <request id>").
TURNS_CHANNEL = "a2a_turns"


def status_event(task: Task) -> StreamResponse:
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=task.status
        )
    )


def event_kind(event: StreamResponse) -> str:
    if event.task is not None:
        return "task"
    if event.status_update is not None:
        return "status"
    if event.artifact_update is not None:
        return "artifact"
    return "message"


async def append_event(conn: Conn, principal: str, event: StreamResponse) -> None:
    """Append one event to `task_events` and announce it (delivered at commit)."""
    task_id = _event_task_id(event)
    await conn.execute(
        "INSERT INTO task_events (principal, task_id, kind, body) VALUES ($1, $2, $3, $4)",
        principal,
        task_id,
        event_kind(event),
        event.model_dump_json(by_alias=True, exclude_none=True),
    )
    await conn.execute("SELECT pg_notify($1, $2)", EVENTS_CHANNEL, task_id)


def _event_task_id(event: StreamResponse) -> str:
    if event.task is not None:
        return event.task.id
    if event.status_update is not None:
        return event.status_update.task_id
    if event.artifact_update is not None:
        return event.artifact_update.task_id
    return (event.message.task_id if event.message else None) or ""


_TERMINAL = [s.value for s in TaskState if s.terminal]
_ACTIVE = [s.value for s in ACTIVE_STATES]


class PostgresTaskStore(PostgresStore):
    async def probe(self) -> None:
        # A write that takes a row lock and leaves nothing behind.
        await self._db.execute("DELETE FROM tasks WHERE principal = '' AND id = ''")

    def save(self, principal: str, task: Task) -> Queued[None]:
        return self._save(principal, task)

    async def _save(self, principal: str, task: Task) -> None:
        """Fenced: written only while this replica's lease is live on the database's clock,
        checked in the same statement (a replica frozen past its lease, whose tasks and
        contexts survivors took, writes nothing), and never over a terminal task."""
        written = await self._db.fetchval(
            "INSERT INTO tasks (principal, id, context_id, state, status_ts, body, replica) "
            "SELECT $1, $2, $3, $4, $5, $6, $7 WHERE EXISTS (SELECT 1 FROM replicas "
            "WHERE id = $7 AND expires_at > now()) ON CONFLICT (principal, id) DO UPDATE SET "
            "context_id = EXCLUDED.context_id, state = EXCLUDED.state, "
            "status_ts = EXCLUDED.status_ts, body = EXCLUDED.body, replica = EXCLUDED.replica "
            "WHERE tasks.state <> ALL($8::text[]) OR tasks.body = EXCLUDED.body RETURNING 1",
            principal,
            task.id,
            task.context_id,
            task.status.state.value,
            sort_key(task)[0],
            task.model_dump_json(by_alias=True, exclude_none=True),
            self._db.replica_id,
            _TERMINAL,
        )
        if written is None:
            self._db.doubt_lease()
            raise StaleWriteError

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
                await append_event(conn, row["principal"], status_event(task))
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
        """On the leading replica only (`PostgresDatabase.leads`), under an advisory lock;
        the others return 0 at once."""
        if not await self._db.leads():
            return 0
        cutoff = format_timestamp(before)

        async def purge(conn: Conn) -> int:
            async def delete() -> int:
                status = await conn.execute(
                    "DELETE FROM tasks WHERE state = ANY($1::text[]) AND status_ts < $2",
                    _TERMINAL,
                    cutoff,
                )
                await conn.execute(
                    "DELETE FROM task_events e WHERE NOT EXISTS (SELECT 1 FROM tasks t "
                    "WHERE t.principal = e.principal AND t.id = e.task_id)"
                )
                return count_of(status)

            return await exclusively(conn, "tasks.purge", delete, 0)

        return await self._db.run(purge)
