"""The records of daemon instances and the agent processes each started: a table pair in the
storage's SQLite file (or in memory, where nothing outlives the process anyway)."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from core.storage.sqlite.database import SqliteDatabase

SCHEMA = """
CREATE TABLE IF NOT EXISTS daemon_instances (
    id TEXT PRIMARY KEY,
    pid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    boot_id TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS daemon_processes (
    instance TEXT NOT NULL,
    pid INTEGER NOT NULL,
    pgid INTEGER NOT NULL,
    start_time INTEGER NOT NULL,
    PRIMARY KEY (instance, pid)
);
"""


@dataclass(frozen=True)
class Instance:
    """A daemon: `start_time` as `/proc` counts it, on the boot `boot_id`."""

    id: str
    pid: int
    start_time: int
    boot_id: str


@dataclass(frozen=True)
class Recorded:
    """An agent process an instance started (the leader of process group `pgid`, or a
    process the SDK started in the daemon's group)."""

    pid: int
    pgid: int
    start_time: int


class InstanceRecords(Protocol):
    """Written by one daemon at a time (the storage lock guarantees it)."""

    async def open(self) -> None: ...

    async def close(self) -> None: ...

    async def previous(self) -> list[tuple[Instance, list[Recorded]]]:
        """Every instance recorded before this one, with its processes."""
        ...

    async def begin(self, instance: Instance) -> None: ...

    async def started(self, pid: int, pgid: int, start_time: int) -> None: ...

    async def ended(self, pid: int) -> None: ...

    async def forget(self, instance_id: str) -> None:
        """Drop an instance and its process records."""
        ...


class InMemoryInstanceRecords:
    def __init__(self) -> None:
        self._instances: dict[str, Instance] = {}
        self._processes: dict[str, dict[int, Recorded]] = {}
        self._current = ""

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def previous(self) -> list[tuple[Instance, list[Recorded]]]:
        return [
            (instance, list(self._processes.get(instance.id, {}).values()))
            for instance in self._instances.values()
            if instance.id != self._current
        ]

    async def begin(self, instance: Instance) -> None:
        self._current = instance.id
        self._instances[instance.id] = instance

    async def started(self, pid: int, pgid: int, start_time: int) -> None:
        self._processes.setdefault(self._current, {})[pid] = Recorded(pid, pgid, start_time)

    async def ended(self, pid: int) -> None:
        self._processes.get(self._current, {}).pop(pid, None)

    async def forget(self, instance_id: str) -> None:
        self._instances.pop(instance_id, None)
        self._processes.pop(instance_id, None)


class SqliteInstanceRecords:
    def __init__(self, path: Path) -> None:
        self._db = SqliteDatabase(path, SCHEMA, "instance records")
        self._current = ""

    async def open(self) -> None:
        await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    async def previous(self) -> list[tuple[Instance, list[Recorded]]]:
        current = self._current

        def read(conn: sqlite3.Connection) -> list[tuple[Instance, list[Recorded]]]:
            found = []
            rows = conn.execute(
                "SELECT id, pid, start_time, boot_id FROM daemon_instances WHERE id != ?",
                (current,),
            ).fetchall()
            for row in rows:
                processes = conn.execute(
                    "SELECT pid, pgid, start_time FROM daemon_processes WHERE instance = ?",
                    (row[0],),
                ).fetchall()
                found.append((Instance(*row), [Recorded(*p) for p in processes]))
            return found

        return await self._db.run(read)

    async def begin(self, instance: Instance) -> None:
        self._current = instance.id
        await self._db.run(
            lambda conn: conn.execute(
                "INSERT INTO daemon_instances (id, pid, start_time, boot_id) VALUES (?, ?, ?, ?)",
                (instance.id, instance.pid, instance.start_time, instance.boot_id),
            )
        )

    async def started(self, pid: int, pgid: int, start_time: int) -> None:
        current = self._current
        await self._db.run(
            lambda conn: conn.execute(
                "INSERT OR REPLACE INTO daemon_processes (instance, pid, pgid, start_time)"
                " VALUES (?, ?, ?, ?)",
                (current, pid, pgid, start_time),
            )
        )

    async def ended(self, pid: int) -> None:
        current = self._current
        await self._db.run(
            lambda conn: conn.execute(
                "DELETE FROM daemon_processes WHERE instance = ? AND pid = ?", (current, pid)
            )
        )

    async def forget(self, instance_id: str) -> None:
        def remove(conn: sqlite3.Connection) -> None:
            conn.execute("DELETE FROM daemon_processes WHERE instance = ?", (instance_id,))
            conn.execute("DELETE FROM daemon_instances WHERE id = ?", (instance_id,))

        await self._db.run(remove)
