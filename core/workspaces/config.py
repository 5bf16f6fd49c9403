"""The workspace manager's frozen configuration (built from Settings' `workspace` block)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal


@dataclass(frozen=True)
class WorkspaceConfig:
    mode: Literal["shared", "worktree", "copy"] = "shared"
    # The backend's workingDirectory; None for a backend given as a plain factory, which has
    # none the daemon knows of (its contexts are then not gated in shared mode).
    source: Path | None = None
    root: Path = Path("workspaces")  # where worktrees and copies go
    patches: Path = Path("workspace-patches")  # where an expired workspace's changes are kept
    base_ref: str = "HEAD"
    commit_turns: bool = False
    keep_branches: bool = False
    max_patch_bytes: int = 1024 * 1024
    max_workspaces: int = 64

    @property
    def directory(self) -> Path:
        """What worktrees and copies are made of."""
        return (self.source or Path(".")).expanduser().resolve()

    @property
    def private(self) -> bool:
        """Whether each context has a workspace of its own."""
        return self.mode != "shared"
