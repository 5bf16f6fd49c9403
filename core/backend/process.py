"""Agent subprocesses: started without a shell in a process group of their own, and stopped
by one routine (terminate the group, wait with a deadline, kill, reap).

Every process started here also gets (Linux) a parent-death signal (SIGKILL when the daemon
dies, through util-linux `setpriv`), the instance marker in its environment, and a record in
the ledger the daemon installed, so a restarted daemon can stop what a killed one left behind.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Protocol

import anyio
import anyio.lowlevel
import structlog
from anyio.abc import Process

from core.backend import procfs, sandbox


class ProcessLedger(Protocol):
    """Where the daemon records the agent processes it starts (its store). `started` is
    awaited before `spawn` returns; neither may raise."""

    async def started(self, pid: int, pgid: int, start_time: int) -> None: ...

    async def ended(self, pid: int) -> None: ...


_log = structlog.get_logger(__name__)
_ledger: list[ProcessLedger] = []
# Spawns between fork and their record: their children are not known as ours yet.
_spawning = [0]


def spawn_in_progress() -> bool:
    """Whether a `spawn` has started a process it has not recorded yet."""
    return _spawning[0] > 0


@contextlib.contextmanager
def recording(ledger: ProcessLedger) -> Iterator[None]:
    """Record every process started while this is entered (the daemon enters it once, for its
    lifetime; a process has one daemon, so the ledger is process-wide)."""
    _ledger.append(ledger)
    try:
        yield
    finally:
        _ledger.remove(ledger)


async def track(pid: int) -> None:
    """Record an agent process that someone else started (an SDK spawning its CLI)."""
    info = procfs.read(pid)
    if info is not None:
        for ledger in _ledger:
            await ledger.started(info.pid, info.pgid, info.start_time)


async def untrack(pid: int) -> None:
    for ledger in _ledger:
        await ledger.ended(pid)


@cache
def _setpriv() -> str | None:
    return shutil.which("setpriv") if os.path.isdir("/proc") else None


def _executable(argv0: str, cwd: Path | None, env: Mapping[str, str] | None) -> str:
    """`argv0` resolved as exec would, so a missing binary still fails here (FileNotFoundError,
    as without a launcher) rather than inside the launcher."""
    if os.sep in argv0:
        path = Path(argv0) if Path(argv0).is_absolute() else (cwd or Path.cwd()) / argv0
        if os.access(path, os.X_OK) and path.is_file():
            return str(path)
    else:
        search = (env if env is not None else os.environ).get("PATH", os.defpath)
        found = shutil.which(argv0, path=search)
        if found is not None:
            return found
    raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), argv0)


def with_marker(env: Mapping[str, str] | None) -> dict[str, str] | None:
    """`env` (None: inherit) plus this daemon's instance marker, when it has one."""
    marker = os.environ.get(procfs.MARKER_VARIABLE)
    if env is None or marker is None:
        return dict(env) if env is not None else None
    return {**env, procfs.MARKER_VARIABLE: marker}


def guarded_command(
    argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> list[str]:
    """`argv` behind the parent-death launcher (Linux, where `setpriv` exists; else as it is),
    inside the current sandbox when there is one (`sandbox.serving`).
    For an SDK that starts the agent itself with `subprocess.Popen`: give it this command, the
    environment `with_marker(env)`, `start_new_session=True`, and `track()` the pid."""
    command = list(argv)
    launcher, jail = _setpriv(), sandbox.current()
    if command and (launcher is not None or jail is not None):
        command[0] = _executable(command[0], cwd, env)
    if jail is not None and command:
        command = jail.wrap(command, env)
    if launcher is not None and command:
        # setpriv sets PR_SET_PDEATHSIG, then execs: same pid, nothing left in between.
        command = [launcher, "--pdeathsig", "KILL", "--", *command]
    return command


async def spawn(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Process:
    """Start `argv` (no shell) as the leader of a new process group, so stopping it also
    stops whatever it started. It is SIGKILLed if the daemon dies (Linux), carries the
    instance marker, and is recorded before this returns."""
    command = guarded_command(argv, cwd=cwd, env=env)
    _spawning[0] += 1
    try:
        process = await anyio.open_process(
            command, cwd=cwd, env=with_marker(env), start_new_session=True
        )
        await track(process.pid)
    finally:
        _spawning[0] -= 1
    return process


async def wait_exited(pids: list[int]) -> None:
    """Return once every process in `pids` has exited (pidfds: no polling). Bound it with a
    cancel scope."""
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            await anyio.wait_readable(fd)
        finally:
            os.close(fd)


async def stop_pid(pid: int, *, grace: float, force: bool = False) -> None:
    """Stop a process that someone else started and reaps (an SDK's child), known by pid:
    give it `grace` s to exit on its own (none with `force`), then SIGTERM, `grace` s more,
    then SIGKILL; return once it has exited. Signals go through a pidfd opened at once, so a
    pid reused meanwhile is never hit. Run it beside what makes the process exit normally
    (closing its client) and cancel it once that is done."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        for sig, wait in ((None, 0 if force else grace), (signal.SIGTERM, grace)):
            if sig is not None:
                _log.info("process.terminate", pid=pid)
                _pidfd_signal(fd, sig)
            with anyio.move_on_after(wait):
                await anyio.wait_readable(fd)
                return
        _log.warning("process.kill", pid=pid)
        _pidfd_signal(fd, signal.SIGKILL)
        await anyio.wait_readable(fd)
    finally:
        os.close(fd)


def _pidfd_signal(fd: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        signal.pidfd_send_signal(fd, sig)


def _signal_group(process: Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


async def stop(process: Process, *, grace: float = 5.0) -> int:
    """SIGTERM the process group, wait up to `grace` s, then SIGKILL it; always reaps, then
    closes the daemon's ends of its pipes (what it wrote that nobody has read is dropped; a
    reader of its output gets ClosedResourceError). Safe to call on a process that already
    exited, and again. Returns the exit code."""
    code = -1
    with anyio.CancelScope(shield=True):
        if process.returncode is None:
            _signal_group(process, signal.SIGTERM)
            with anyio.move_on_after(grace):
                await process.wait()
        if process.returncode is None:
            _signal_group(process, signal.SIGKILL)
        code = await process.wait()
        # The leader is gone; make sure nothing it started lingers in its group.
        _signal_group(process, signal.SIGKILL)
        await untrack(process.pid)
        # A process that left the group (a session of its own) may hold the other ends: they
        # would never reach end of file, and ours would stay open for the daemon's life.
        await process.aclose()
        # The event loop closes a pipe's descriptor in its next pass: let that pass happen.
        await anyio.lowlevel.checkpoint()
    return code
