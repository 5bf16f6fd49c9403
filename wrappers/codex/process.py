"""Child processes of the Codex backend: started without a shell, in a process group of their
own, and stopped by one helper (close stdin -> terminate the group -> kill it -> reap)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path

import anyio
from anyio.abc import Process


async def open_agent_process(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str]) -> Process:
    """Start `argv` with piped stdio in a new session (its own process group), so stopping it
    also stops whatever it started."""
    return await anyio.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=dict(env),
        start_new_session=True,
    )


async def stop_process(process: Process, *, grace: float = 2.0, kill_after: float = 3.0) -> int:
    """Stop `process` and its group, returning its exit code. Closing stdin asks it to leave;
    after `grace` seconds the group gets SIGTERM, after `kill_after` more SIGKILL. Shielded:
    a caller being cancelled never leaves a child behind."""
    with anyio.CancelScope(shield=True):
        if process.stdin is not None:
            await process.stdin.aclose()
        with anyio.move_on_after(grace):
            await process.wait()
        if process.returncode is None:
            _signal_group(process, signal.SIGTERM)
            with anyio.move_on_after(kill_after):
                await process.wait()
        if process.returncode is None:
            _signal_group(process, signal.SIGKILL)
            await process.wait()
        # Whatever the leader started and left behind in its group goes too.
        _signal_group(process, signal.SIGKILL)
        returncode = process.returncode
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                await stream.aclose()
    return returncode if returncode is not None else -1


def _signal_group(process: Process, signum: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)


def thread_commands(thread_id: str, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the tool commands Codex runs for `thread_id`: Codex gives each one
    CODEX_THREAD_ID and CODEX_TOOL_CALL_ID in its environment."""
    wanted = f"CODEX_THREAD_ID={thread_id}".encode()
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue  # gone meanwhile, or not ours to read
        if wanted in environ and any(v.startswith(b"CODEX_TOOL_CALL_ID=") for v in environ):
            found.append(int(entry.name))
    return found


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


async def stop_thread_commands(thread_id: str, *, grace: float) -> None:
    """Make sure no command of `thread_id` survives: wait `grace` seconds for them to end
    (Codex kills them itself), then SIGKILL what is left and wait for it."""
    pids = thread_commands(thread_id)
    if not pids:
        return
    with anyio.move_on_after(grace):
        await wait_exited(pids)
        return
    for pid in pids:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    await wait_exited(pids)
