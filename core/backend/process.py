"""Agent subprocesses: started without a shell in a process group of their own, and stopped
by one routine (terminate the group, wait with a deadline, kill, reap)."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio
from anyio.abc import Process


async def spawn(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Process:
    """Start `argv` (no shell) as the leader of a new process group, so stopping it also
    stops whatever it started."""
    return await anyio.open_process(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        start_new_session=True,
    )


def _signal_group(process: Process, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)


async def stop(process: Process, *, grace: float = 5.0) -> int:
    """SIGTERM the process group, wait up to `grace` s, then SIGKILL it; always reaps.
    Safe to call on a process that already exited. Returns the exit code."""
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
    return code
