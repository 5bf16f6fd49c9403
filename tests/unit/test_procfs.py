"""core.backend.procfs against real processes: the environment a process started with, which
the wrappers' walkers read (Claude's marker, the Codex commands of a thread)."""

from __future__ import annotations

import os
import subprocess
import sys

from core.backend import procfs


def test_environment_is_what_the_process_started_with() -> None:
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print('ready', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "CODEX_THREAD_ID": "t-1", "EMPTY": ""},
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline() == b"ready\n"  # it runs (past exec, whatever started it)
        environment = procfs.environment(child.pid)

        assert environment["CODEX_THREAD_ID"] == "t-1"
        assert environment["EMPTY"] == ""
        assert procfs.environment_has(child.pid, "CODEX_THREAD_ID", "t-1")
        assert not procfs.environment_has(child.pid, "CODEX_THREAD_ID", "t-2")
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=10)
        assert child.stdout is not None
        child.stdout.close()
    assert procfs.environment(child.pid) == {}, "gone: nothing to read"
