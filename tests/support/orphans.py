"""Watching a real daemon's processes from a test: which are alive, which belong to a daemon
instance (below its pid, or carrying its instance marker), and waiting, with a deadline, until
they are gone."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from core.backend import procfs
from tests.support.daemon import Daemon


def alive(pid: int) -> bool:
    info = procfs.read(pid)
    return info is not None and not info.zombie


def still_running(known: list[procfs.ProcessInfo]) -> list[procfs.ProcessInfo]:
    """Those of `known` that still run (same pid and start time)."""
    running = []
    for info in known:
        now = procfs.read(info.pid)
        if now is not None and not now.zombie and now.start_time == info.start_time:
            running.append(info)
    return running


def of_instance(daemon_pid: int, instance: str) -> list[procfs.ProcessInfo]:
    """The live processes of a daemon instance: everything below it (while it runs) and
    everything carrying its marker, the daemon itself excluded."""
    table = procfs.processes()
    found = {p.pid: p for p in procfs.descendants(daemon_pid, table) if not p.zombie}
    found.update((p.pid, p) for p in procfs.marked(instance, table))
    found.pop(daemon_pid, None)
    return list(found.values())


def await_gone(pids: list[int], timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while left := [pid for pid in pids if alive(pid)]:
        assert time.monotonic() < deadline, f"still running: {left}"
        time.sleep(0.05)


def await_instance_gone(
    known: list[procfs.ProcessInfo], instance: str, timeout: float = 15
) -> None:
    """Wait until none of `known` runs and no process carries the marker of `instance`."""
    deadline = time.monotonic() + timeout
    while (left := still_running(known) + procfs.marked(instance)) != []:
        assert time.monotonic() < deadline, f"still running: {left}"
        time.sleep(0.05)


def await_file(path: Path, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)
    return path.read_text()


def logged(daemon: Daemon, event: str) -> list[dict[str, Any]]:
    """Every JSON log line of `event` the daemon wrote so far (all its runs)."""
    return [
        entry
        for line in daemon.log_path.read_text().splitlines()
        if line.startswith("{") and (entry := json.loads(line)).get("event") == event
    ]


def await_logged(
    daemon: Daemon, event: str, *, count: int = 1, timeout: float = 10
) -> dict[str, Any]:
    """The `count`-th log line of `event`, once the daemon wrote it."""
    deadline = time.monotonic() + timeout
    while len(found := logged(daemon, event)) < count:
        assert time.monotonic() < deadline, f"{event} never logged"
        time.sleep(0.05)
    return found[count - 1]


def cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
