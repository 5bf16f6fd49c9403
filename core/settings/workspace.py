"""The `workspace` block of the Settings model: where each context's agent works (one shared
directory, a git worktree per context, or a private copy per context) and what becomes of
its changes (docs/configuration.md, "Workspaces")."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from core.backend.config import Block

WorkspaceMode = Literal["shared", "worktree", "copy"]


class WorkspaceSettings(Block):
    mode: WorkspaceMode = Field(
        default="shared",
        description="shared: every context works in workingDirectory, one turn at a time; "
        "worktree: a git worktree per context on branch a2a/<context>; copy: a private copy "
        "per context (a directory that is not a git repository)",
    )
    root: Path | None = Field(
        default=None,
        description="Where worktrees and copies are made; unset = `workspaces` in the state "
        "directory (beside the storage file)",
    )
    base_ref: str = Field(
        default="HEAD", min_length=1, description="What a new worktree's branch starts from"
    )
    commit_turns: bool = Field(
        default=False,
        description="Commit each turn's changes on the context's branch (the changes artifact "
        "names the commit)",
    )
    keep_branches: bool = Field(
        default=False,
        description="Keep a context's branch when its expired workspace is removed",
    )
    max_patch_bytes: int = Field(
        default=1024 * 1024,
        ge=1,
        description="Bytes the patches sent in one message may have together",
    )
    max_workspaces: int = Field(
        default=64, ge=1, description="Workspaces (worktrees or copies) that may exist at once"
    )
