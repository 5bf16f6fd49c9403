"""What Linux `/proc` says about processes: parent, group, state and start time, the tree below
a process, and the instance marker in an environment. Elsewhere (no `/proc`) every function
finds nothing, so callers degrade to doing nothing rather than failing.

A pid alone never identifies a process: the kernel reuses pids. `start_time` (field 22 of
`/proc/<pid>/stat`, clock ticks since boot) does, together with the pid.
"""

from __future__ import annotations

import ctypes
import os
import signal
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

PROC = Path("/proc")

# Every agent process (and whatever it starts, unless it scrubs its environment) carries
# `MARKER_VARIABLE=<instance id>`: how a restarted daemon finds what its predecessor left,
# even processes that escaped into sessions and process groups of their own.
MARKER_VARIABLE = "A2A_WRAPPER_INSTANCE"

PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    ppid: int
    pgid: int
    state: str
    start_time: int

    @property
    def zombie(self) -> bool:
        return self.state in ("Z", "X")


def read(pid: int, proc: Path = PROC) -> ProcessInfo | None:
    """The process `pid` as `/proc` shows it now, or None when there is no such process."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        # The command name (field 2) may hold spaces and parentheses: split after the last ")".
        fields = stat[stat.rindex(")") + 2 :].split()
        # fields[0] is field 3 (state); field N is fields[N - 3].
        return ProcessInfo(pid, int(fields[1]), int(fields[2]), fields[0], int(fields[19]))
    except (OSError, ValueError, IndexError):
        return None


def processes(proc: Path = PROC) -> list[ProcessInfo]:
    """Every process visible now."""
    found = []
    with suppress(OSError):
        for entry in proc.iterdir():
            if entry.name.isdigit() and (info := read(int(entry.name), proc)) is not None:
                found.append(info)
    return found


def children(parent: int, table: Iterable[ProcessInfo] | None = None) -> list[ProcessInfo]:
    """The live (not zombie) children of `parent`."""
    return [
        p for p in (processes() if table is None else table) if p.ppid == parent and not p.zombie
    ]


def descendants(root: int, table: Iterable[ProcessInfo] | None = None) -> list[ProcessInfo]:
    """Every process below `root` (children first), zombies included."""
    below: dict[int, list[ProcessInfo]] = {}
    for info in processes() if table is None else table:
        below.setdefault(info.ppid, []).append(info)
    found: list[ProcessInfo] = []
    pending = list(below.get(root, []))
    while pending:
        info = pending.pop(0)
        found.append(info)
        pending.extend(below.get(info.pid, []))
    return found


def environment(pid: int) -> dict[str, str]:
    """The environment `pid` started with ({} when it is not ours to read or gone)."""
    try:
        raw = (PROC / str(pid) / "environ").read_bytes()
    except OSError:
        return {}
    pairs = (item.partition(b"=") for item in raw.split(b"\0") if b"=" in item)
    return {k.decode(errors="replace"): v.decode(errors="replace") for k, _, v in pairs}


def environment_has(pid: int, variable: str, value: str) -> bool:
    """Whether `variable=value` is in the environment `pid` started with (False when it is not
    ours to read or gone)."""
    return environment(pid).get(variable) == value


def marked(value: str, table: Iterable[ProcessInfo] | None = None) -> list[ProcessInfo]:
    """The live processes whose environment carries the instance marker `value`."""
    return [
        p
        for p in (processes() if table is None else table)
        if not p.zombie and environment_has(p.pid, MARKER_VARIABLE, value)
    ]


def kill(info: ProcessInfo) -> bool:
    """SIGKILL `info` if that very process (same pid and start time) still runs."""
    now = read(info.pid)
    if now is None or now.start_time != info.start_time or now.zombie:
        return False
    with suppress(ProcessLookupError, PermissionError):
        os.kill(info.pid, signal.SIGKILL)
        return True
    return False


def kill_below(root: int, *, rounds: int = 5, groups: bool = False) -> list[int]:
    """SIGKILL everything below `root`, again until nothing live is left (a process may fork
    between the walk and the kill). With `groups`, each one's whole process group goes too
    (unless it is this process's own): agents run tools in sessions of their own, whose members
    need not stay below them. Returns the pids killed."""
    killed: list[int] = []
    own_group = os.getpgrp()
    for _ in range(rounds):
        live = [p for p in descendants(root) if not p.zombie]
        if not live:
            break
        for info in live:
            if groups and info.pgid != own_group:
                with suppress(ProcessLookupError, PermissionError):
                    os.killpg(info.pgid, signal.SIGKILL)
        killed += [p.pid for p in live if kill(p)]
    return killed


def _prctl(option: int, value: int) -> bool:
    """One prctl(2) call; False where there is no prctl (not Linux) or it fails."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(option, value, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def become_subreaper() -> bool:
    """Make this process the child subreaper of everything it starts: an orphaned descendant is
    re-parented here instead of to init, so it can still be found and stopped."""
    return _prctl(PR_SET_CHILD_SUBREAPER, 1)
