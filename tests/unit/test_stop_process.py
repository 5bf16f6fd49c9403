"""core.backend.process.stop on a real child of its own spawn: once it returns, the child is
reaped and none of its pipes is left open in the daemon, even when something the child started
outside its process group still holds their other ends (left open, each would be a descriptor
leaked for the daemon's life, and a ResourceWarning once the event loop that made it closes)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

import anyio

from core.backend import procfs
from core.backend.process import spawn, stop

READY_THEN_SLEEP = "import time; print('ready', flush=True); time.sleep(60)"


def pipes() -> set[str]:
    """This process's open pipe descriptors, as /proc names them (`pipe:[inode]`)."""
    found = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except FileNotFoundError:  # the listing's own descriptor, closed already
            continue
        if target.startswith("pipe:"):
            found.add(target)
    return found


async def test_stop_reaps_the_child_and_closes_its_pipes() -> None:
    before = pipes()
    child = await spawn([sys.executable, "-c", READY_THEN_SLEEP])
    assert child.stdout is not None
    assert (await child.stdout.receive()).startswith(b"ready")  # past exec
    assert len(pipes() - before) == 3  # stdin, stdout, stderr

    with anyio.fail_after(10):
        code = await stop(child, grace=5)

    assert code == child.returncode == -15
    assert pipes() - before == set()


async def test_stop_closes_the_pipes_of_a_child_that_already_exited() -> None:
    before = pipes()
    child = await spawn([sys.executable, "-c", "print('bye')"])
    assert await child.wait() == 0

    with anyio.fail_after(10):
        assert await stop(child, grace=5) == 0

    assert pipes() - before == set()


async def test_stop_closes_the_pipes_a_process_outside_the_group_still_holds() -> None:
    before = pipes()
    # The grandchild leaves the group (a session of its own) with the child's stdout and
    # stderr: killing the group does not reach it, so those pipes never reach end of file.
    child = await spawn(["bash", "-c", "setsid bash -c 'echo $$; exec sleep 60' & sleep 60"])
    assert child.stdout is not None
    escaped = int((await child.stdout.receive()).split()[0])
    try:
        with anyio.fail_after(10):
            await stop(child, grace=5)

        grandchild = procfs.read(escaped)
        assert grandchild is not None and not grandchild.zombie  # holds the pipes' other ends
        assert pipes() - before == set()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(escaped, signal.SIGKILL)
