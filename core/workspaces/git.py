"""git as a real subprocess (argv, never a shell), with an error that says what failed."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

# The daemon's own commits (workspace.commitTurns, the base of a copy): set per command, so
# a machine without a global git identity (CI) commits all the same.
IDENTITY = ("-c", "user.name=a2a-wrapper", "-c", "user.email=a2a-wrapper@localhost")
_QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "LC_ALL": "C",
}


class GitError(RuntimeError):
    """A git command failed; `stderr` is git's own text (for the log, not for callers)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(argv)} exited {returncode}: {stderr.strip()[:2000]}")
        self.returncode = returncode
        self.stderr = stderr


async def git(
    *argv: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> bytes:
    """Run `git argv...` and return its stdout; GitError when it exits non-zero."""
    environ = {**os.environ, **_QUIET_ENV, **(env or {})}
    result = await anyio.run_process(
        ["git", *argv],
        input=stdin,
        cwd=cwd,
        env=environ,
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if result.returncode != 0:
        raise GitError(argv, result.returncode, result.stderr.decode("utf-8", "replace"))
    return result.stdout


async def toplevel(directory: Path) -> Path | None:
    """The root of the git work tree `directory` is in, None when it is in none."""
    try:
        out = await git("rev-parse", "--show-toplevel", cwd=directory)
    except (GitError, OSError):
        return None
    return Path(out.decode().strip())


def is_repository(directory: Path) -> bool:
    """Whether `directory` is inside a git work tree (synchronous: `check` and start-up)."""
    try:
        result = subprocess.run(
            ["git", "rev-parse", "--is-inside-work-tree"],  # noqa: S607 - git from PATH
            cwd=directory,
            env={**os.environ, **_QUIET_ENV},
            capture_output=True,
            check=False,
        )
    except OSError:
        return False
    return result.returncode == 0 and result.stdout.strip() == b"true"
