"""Process hygiene for the daemon's lifetime: no agent process outlives it.

- The storage lock first (one daemon per storage; holding it proves earlier ones are dead).
- The daemon becomes a child subreaper, so agent descendants that lose their parent are
  re-parented to it, not to init; it reaps the ones it did not start itself.
- Every agent process carries the instance marker and is recorded (`core.backend.process`).
- At start, whatever an earlier instance on the same storage left running is SIGKILLed: its
  recorded processes whose start time still matches (never a recycled pid) with everything
  below them, and every process carrying its marker that started after it did.
- At exit (however the daemon stops short of SIGKILL) everything below it is SIGKILLed.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import structlog

from core.backend import procfs
from core.backend.process import recording, spawn_in_progress, wait_exited
from core.engine.startup import StorageStartError, failing_as
from core.instance.lock import storage_lock
from core.instance.records import (
    InMemoryInstanceRecords,
    Instance,
    InstanceRecords,
    Recorded,
    SqliteInstanceRecords,
)

log = structlog.get_logger(__name__)

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
# How long a start waits for the leftovers it killed to be gone (SIGKILL is near-instant;
# a process stuck in the kernel is not waited for longer).
LEFTOVER_WAIT = 5.0


def _boot_id() -> str:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return ""


class Ledger:
    """The records, plus the pids recorded as live (the reaper leaves those to their owners)."""

    def __init__(self, records: InstanceRecords) -> None:
        self.records = records
        self.live: set[int] = set()

    async def started(self, pid: int, pgid: int, start_time: int) -> None:
        self.live.add(pid)
        # A record that cannot be written weakens the next start's clean-up (the marker
        # remains); it must not fail the turn that starts the agent.
        try:
            await self.records.started(pid, pgid, start_time)
        except Exception:
            log.warning("daemon.process_record_failed", pid=pid, exc_info=True)

    async def ended(self, pid: int) -> None:
        self.live.discard(pid)
        try:
            await self.records.ended(pid)
        except Exception:
            log.warning("daemon.process_record_failed", pid=pid, exc_info=True)


def leftovers(
    instance: Instance, recorded: list[Recorded], table: list[procfs.ProcessInfo]
) -> list[procfs.ProcessInfo]:
    """What of `instance` still runs: its recorded processes whose start time matches, what
    runs below them or in their process groups, and what carries its marker and started after
    it. Nothing when the machine rebooted since (start times count from boot); never this
    process or its ancestors."""
    if instance.boot_id != _boot_id():
        return []
    now = {p.pid: p for p in table if not p.zombie}
    found: dict[int, procfs.ProcessInfo] = {}
    for record in recorded:
        info = now.get(record.pid)
        if info is None or info.start_time != record.start_time:
            continue  # gone, or the pid now names another process
        found[info.pid] = info
        found.update((p.pid, p) for p in procfs.descendants(info.pid, table) if not p.zombie)
        if record.pgid == record.pid:
            # The leader still runs, so its group is still the one recorded.
            found.update((p.pid, p) for p in now.values() if p.pgid == record.pgid)
    for info in procfs.marked(instance.id, now.values()):
        if info.start_time >= instance.start_time:
            found[info.pid] = info
    for mine in _ancestry(now):
        found.pop(mine, None)
    return list(found.values())


def _ancestry(table: dict[int, procfs.ProcessInfo]) -> set[int]:
    """This process and every process above it."""
    chain, pid = set(), os.getpid()
    while pid > 0 and pid not in chain:
        chain.add(pid)
        info = table.get(pid)
        pid = info.ppid if info is not None else 0
    return chain


async def stop_leftovers(records: InstanceRecords) -> int:
    """SIGKILL what earlier instances left running, wait (bounded) until it is gone, forget
    them. Returns how many processes were stopped."""
    stopped = 0
    for instance, recorded in await records.previous():
        found = leftovers(instance, recorded, procfs.processes())
        killed = [info.pid for info in found if procfs.kill(info)]
        stopped += len(killed)
        with anyio.move_on_after(LEFTOVER_WAIT):
            await wait_exited(killed)
        await records.forget(instance.id)
    return stopped


def stop_everything(instance_id: str) -> list[int]:
    """SIGKILL everything below this process and everything carrying its marker. Synchronous:
    also the last thing a forced exit does. Returns the pids killed."""
    killed = procfs.kill_below(os.getpid())
    me = os.getpid()
    killed += [p.pid for p in procfs.marked(instance_id) if p.pid != me and procfs.kill(p)]
    return killed


def reap_orphans(ledger: Ledger) -> None:
    """Reap exited children this daemon did not start itself (orphans re-parented to the
    subreaper). Its own children are left to whoever waits for them: processes started through
    `core.backend.process` (recorded as live) and those an SDK started in the daemon's own
    process group. While a spawn has not recorded its process yet, nothing is reaped (the
    next SIGCHLD, or the exit, reaps what is left)."""
    if spawn_in_progress():
        return
    me, own_group = os.getpid(), os.getpgrp()
    for info in procfs.processes():
        if info.ppid != me or not info.zombie:
            continue
        if info.pid in ledger.live or info.pgid == own_group:
            continue
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.pid, os.WNOHANG)


def _reap_all() -> None:
    """At exit: every exited child, whoever started it (all owners are gone by now)."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


class Guard:
    def __init__(self, instance: Instance) -> None:
        self.instance = instance

    def force_stop(self) -> None:
        """For a forced exit: kill every agent process now, synchronously."""
        stop_everything(self.instance.id)


@contextlib.asynccontextmanager
async def guarded(storage: Path | None) -> AsyncIterator[Guard]:
    """Run the daemon's body under the storage lock (when `storage` is a file, not memory) with
    the process hygiene above. Raises StorageInUseError before touching the store."""
    with storage_lock(storage) if storage is not None else contextlib.nullcontext():
        me = procfs.read(os.getpid())
        instance = Instance(uuid.uuid4().hex, os.getpid(), me.start_time if me else 0, _boot_id())
        # Inherited by every process the daemon starts, however it is started.
        os.environ[procfs.MARKER_VARIABLE] = instance.id
        subreaper = procfs.become_subreaper()
        records: InstanceRecords = (
            SqliteInstanceRecords(storage) if storage is not None else InMemoryInstanceRecords()
        )
        # The storage file was checked (core/storage/kinds.py); what it still cannot do
        # (a damaged page) is one line and the storage exit code, not a traceback.
        with failing_as(StorageStartError):
            await records.open()
        ledger = Ledger(records)
        loop = asyncio.get_running_loop()
        try:
            stopped = await stop_leftovers(records)
            log.info("daemon.instance", instance=instance.id, subreaper=subreaper)
            if stopped:
                log.warning("daemon.leftovers_stopped", count=stopped)
            await records.begin(instance)
            loop.add_signal_handler(signal.SIGCHLD, reap_orphans, ledger)
            with recording(ledger):
                yield Guard(instance)
        finally:
            loop.remove_signal_handler(signal.SIGCHLD)
            killed = stop_everything(instance.id)
            with anyio.CancelScope(shield=True):
                if killed:
                    log.warning("daemon.agent_processes_killed", count=len(killed))
                    with anyio.move_on_after(LEFTOVER_WAIT):
                        await wait_exited(killed)
                _reap_all()
                if not procfs.marked(instance.id):
                    await records.forget(instance.id)
                await records.close()
