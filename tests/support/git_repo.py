"""git in tests: a command (with an identity of its own, since CI has no global one) and a
small repository to make workspaces of."""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = ["-c", "user.name=test", "-c", "user.email=test@localhost"]


def git(repo: Path, *argv: str) -> str:
    """`git argv...` in `repo`; its stdout (raises when it fails)."""
    done = subprocess.run(  # noqa: S603 - argv, no shell
        ["git", *IDENTITY, *argv],  # noqa: S607 - git from PATH
        cwd=repo,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def make_repository(where: Path, files: dict[str, str] | None = None) -> Path:
    """A repository at `where` on branch main with one commit of `files` (default:
    notes.txt holding "original")."""
    for name, text in (files or {"notes.txt": "original\n"}).items():
        path = where / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    git(where, "init", "-q", "-b", "main")
    git(where, "add", "-A")
    git(where, "commit", "-q", "-m", "base")
    return where
