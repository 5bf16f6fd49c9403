"""core.backend.process.stop_pid on real children that someone else reaps (here: the test, as
an SDK would): a child that exits by itself is not signalled; one that ignores SIGTERM is
killed after the grace."""

from __future__ import annotations

import subprocess
import sys

import anyio

from core.backend.process import stop_pid

IGNORES_TERM = (
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "print('ready', flush=True); time.sleep(60)"
)


def child(code: str) -> subprocess.Popen[bytes]:
    started = subprocess.Popen(  # noqa: S603 - a fixed argument list, no shell
        [sys.executable, "-c", code], stdout=subprocess.PIPE
    )
    assert started.stdout is not None
    assert started.stdout.readline() == b"ready\n"  # past exec, its handlers in place
    return started


async def test_a_child_that_exits_within_the_grace_is_not_signalled() -> None:
    quick = child("print('ready', flush=True)")

    with anyio.fail_after(10):
        await stop_pid(quick.pid, grace=5)

    assert quick.wait(timeout=10) == 0
    assert quick.stdout is not None
    quick.stdout.close()


async def test_a_child_that_ignores_sigterm_is_killed_after_the_grace() -> None:
    stubborn = child(IGNORES_TERM)

    with anyio.fail_after(10):
        await stop_pid(stubborn.pid, grace=0.2, force=True)

    assert stubborn.wait(timeout=10) == -9
    assert stubborn.stdout is not None
    stubborn.stdout.close()
    await stop_pid(stubborn.pid, grace=0.2)  # gone: returns at once
