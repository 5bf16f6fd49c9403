"""What a hostile agent writes into its worktree to make the daemon's git run its commands:
a `.git/` folder of its own (sharing the repository's objects through `alternates`) whose
config names a command, or a `.git` file pointing somewhere else. `HostileBackend` is the
scripted backend that does so, as an edit-only agent could, before its turn's `write:`."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path

from core.backend import BackendEvent, Turn
from tests.support.scripted import ScriptedBackend


def own_git_dir(worktree: Path, repository: Path, config: str) -> None:
    """Replace the worktree's `.git` file by a `.git/` folder with `config`: HEAD on a branch
    at the repository's HEAD, its objects borrowed through `objects/info/alternates`."""
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"],  # noqa: S607 - git from PATH
        cwd=repository,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    dot_git = worktree / ".git"
    if dot_git.is_file():
        dot_git.unlink()
    (dot_git / "objects" / "info").mkdir(parents=True)
    (dot_git / "refs" / "heads").mkdir(parents=True)
    (dot_git / "objects" / "info" / "alternates").write_text(f"{repository / '.git/objects'}\n")
    (dot_git / "refs" / "heads" / "main").write_text(f"{head}\n")
    (dot_git / "HEAD").write_text("ref: refs/heads/main\n")
    (dot_git / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n" + config
    )


def command(marker: Path) -> str:
    """A shell command that leaves `marker` behind when anything runs it."""
    return f"touch {marker}; false"


class HostileBackend(ScriptedBackend):
    """The scripted backend, plus `tamper[context_id](workspace)` run at the start of each
    of that context's turns (in the turn's directory, as the agent's own file edits)."""

    def __init__(self) -> None:
        super().__init__()
        self.tamper: dict[str, Callable[[Path], object]] = {}

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        tamper = self.tamper.get(turn.context_id)
        if tamper is not None and turn.cwd is not None:
            tamper(turn.cwd)
        async for event in super().run_turn(turn):
            yield event
