"""Finding a client's process by its marker, and stopping it for sure (terminate -> wait ->
kill -> reap), on plain child processes."""

from __future__ import annotations

import os
import sys
import time
from subprocess import PIPE

import anyio
from anyio.abc import Process

from wrappers.claude import process

IGNORES_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


class ProcessClient:
    """Stands in for the SDK client: its disconnect returns once its process is reaped."""

    def __init__(self, child: Process) -> None:
        self.child = child

    async def disconnect(self) -> None:
        await self.child.wait()


async def spawn(code: str, **env: str) -> Process:
    return await anyio.open_process(
        [sys.executable, "-c", code], env={**os.environ, **env}, stdin=None, stdout=PIPE
    )


async def test_a_child_is_found_by_its_marker() -> None:
    marked = await spawn("import time; time.sleep(60)", **{process.MARKER_VARIABLE: "m-1"})
    other = await spawn("import time; time.sleep(60)", **{process.MARKER_VARIABLE: "m-2"})
    async with marked, other:
        assert process.find_child("m-1") == marked.pid
        assert process.find_child("m-3") is None
        assert {marked.pid, other.pid} <= set(process.children())
        assert process.alive(marked.pid)
        for child in (marked, other):
            child.kill()
    assert not process.alive(marked.pid)


async def test_stop_terminates_at_once_when_forced() -> None:
    child = await spawn("import time; time.sleep(60)")
    started = time.monotonic()

    async with child:
        await process.stop(ProcessClient(child), child.pid, grace=5, force=True)

    assert child.returncode is not None
    assert time.monotonic() - started < 5


async def test_stop_kills_a_process_that_ignores_sigterm_after_the_grace() -> None:
    child = await spawn(IGNORES_TERM)
    assert child.stdout is not None
    assert (await child.stdout.receive()).startswith(b"ready")  # its handler is in place

    started = time.monotonic()
    async with child:
        await process.stop(ProcessClient(child), child.pid, grace=0.3, force=False)

    assert child.returncode == -9
    assert 0.6 <= time.monotonic() - started < 5


async def test_stop_without_a_pid_relies_on_the_client() -> None:
    child = await spawn("import time; time.sleep(0.2)")

    async with child:
        await process.stop(ProcessClient(child), None, grace=0.1, force=True)

    assert child.returncode == 0
