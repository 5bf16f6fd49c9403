"""git as a real subprocess (argv, never a shell), with an error that says what failed.

Every command runs hardened, because the agent can write anything in its workspace (a `.git`
file or folder, `.gitattributes`): no system or global configuration, no hooks, no fsmonitor,
no attributes file of the user's, no inherited `GIT_*` variable (GIT_DIR, GIT_CONFIG_*,
GIT_EXTERNAL_DIFF...). Commands on a workspace also name its git directory and work tree
explicitly (`Workspace.git_args`), so git never discovers a git directory the agent wrote.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import anyio

# The daemon's own commits (workspace.commitTurns, the base of a copy): set per command, so
# a machine without a global git identity (CI) commits all the same.
IDENTITY = ("-c", "user.name=a2a-wrapper", "-c", "user.email=a2a-wrapper@localhost")
# Command-line configuration outranks the repository's: whatever a config file says, the
# daemon's git runs no hook, no fsmonitor command and reads no user attributes file.
HARDENED = (
    "-c",
    f"core.hooksPath={os.devnull}",
    "-c",
    "core.fsmonitor=false",
    "-c",
    f"core.attributesFile={os.devnull}",
    "-c",
    "submodule.recurse=false",
)
_QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "LC_ALL": "C",
}


class GitError(RuntimeError):
    """A git command failed; `stderr` is git's own text (for the log, not for callers)."""

    def __init__(self, argv: Sequence[str], returncode: int, stderr: str) -> None:
        super().__init__(f"git {' '.join(argv)} exited {returncode}: {stderr.strip()[:2000]}")
        self.returncode = returncode
        self.stderr = stderr


def environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The daemon's environment without any `GIT_*` variable, plus the hardened ones."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    return {**inherited, **_QUIET_ENV, **(extra or {})}


async def git(
    *argv: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: bytes | None = None,
) -> bytes:
    """Run `git argv...` (hardened) and return its stdout; GitError when it exits non-zero."""
    result = await anyio.run_process(
        ["git", *HARDENED, *argv],
        input=stdin,
        cwd=cwd,
        env=environment(env),
        check=False,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    if result.returncode != 0:
        raise GitError(argv, result.returncode, result.stderr.decode("utf-8", "replace"))
    return result.stdout


async def toplevel(directory: Path) -> Path | None:
    """The root of the git work tree `directory` is in, None when it is in none (only for
    workingDirectory, the operator's checkout: never for a workspace)."""
    try:
        out = await git("rev-parse", "--show-toplevel", cwd=directory)
    except (GitError, OSError):
        return None
    return Path(out.decode().strip())


async def common_dir(repository: Path) -> Path:
    """The repository's shared git directory (where `worktrees/` lives)."""
    out = await git("rev-parse", "--path-format=absolute", "--git-common-dir", cwd=repository)
    return Path(out.decode().strip())


def is_repository(directory: Path) -> bool:
    """Whether `directory` is inside a git work tree (synchronous: `check` and start-up)."""
    try:
        result = subprocess.run(  # noqa: S603 - argv, no shell
            ["git", *HARDENED, "rev-parse", "--is-inside-work-tree"],  # noqa: S607 - git from PATH
            cwd=directory,
            env=environment(),
            capture_output=True,
            check=False,
        )
    except OSError:
        return False
    return result.returncode == 0 and result.stdout.strip() == b"true"
