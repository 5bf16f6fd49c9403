"""Making the workspace of a context: a worktree of workingDirectory's repository, or a copy
of workingDirectory with a git directory of its own; for a fork, either one branched from
the source workspace's state (`Start`) instead of from the base.

A fork starts where its source is now: its branch at the source's HEAD commit and its files
as the source's files are (what the source changed and has not committed, untracked files
too), so the fork's agent sees the same uncommitted work. That state is read through the
daemon's own snapshot (a private index; the source's index, HEAD and files stay as they
are), and written into the new work tree by the daemon's hardened git, from objects only.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import anyio

from core.storage.contracts import WorkspaceRecord
from core.workspaces.config import WorkspaceConfig
from core.workspaces.git import IDENTITY, GitError, common_dir, git, toplevel
from core.workspaces.naming import BRANCH_MAX, branch_slug
from core.workspaces.paths import admin_dir


class WorkspaceError(Exception):
    """The workspace cannot be made or used; `reason` is written for the caller."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Workspace:
    record: WorkspaceRecord
    # Both known to the daemon from when it made the workspace, never read from the work
    # tree: a worktree's per-worktree admin directory (under the repository's .git, which
    # the agent cannot write) and the worktree's root; a copy's private git directory and
    # the copy itself.
    git_dir: Path
    top: Path

    @property
    def path(self) -> Path:
        return Path(self.record.path)

    @property
    def git_args(self) -> tuple[str, ...]:
        """How git reaches this workspace: its git directory and work tree named explicitly,
        so the `.git` the agent can rewrite (file or folder) is never looked at."""
        return ("--git-dir", str(self.git_dir), "--work-tree", str(self.top))

    def describe(self, head: str | None = None) -> dict[str, str]:
        """The task's `a2aWrapper.workspace` section."""
        return {
            "mode": self.record.mode,
            "path": self.record.path,
            "branch": self.record.branch,
            "base": self.record.base,
            "head": head or self.record.base,
        }


@dataclass(frozen=True)
class Start:
    """Where a fork's workspace starts: the source's HEAD commit, a commit on top of it
    holding the source's files now (`state`, made by the daemon from its snapshot), the
    source's base, and the source's git directory (a copy's objects come from there)."""

    head: str
    state: str
    base: str
    git_dir: Path


async def worktree(
    config: WorkspaceConfig,
    principal: str,
    context_id: str,
    path: Path,
    start: Start | None = None,
) -> Workspace:
    repository = await toplevel(config.directory)
    if repository is None:
        raise WorkspaceError(
            "workspace.mode is worktree, but workingDirectory is not in a git repository; "
            "use workspace.mode copy for a plain directory."
        )
    if start is None:
        ref = f"{config.base_ref}^{{commit}}"
        base = (await git("rev-parse", "--verify", ref, cwd=repository)).decode().strip()
        head = base
    else:
        base, head = start.base, start.head
    branch = await _free_branch(repository, context_id)
    # A worktree whose folder was deleted by hand is still registered until pruned.
    await git("worktree", "prune", cwd=repository)
    checkout = () if start is None else ("--no-checkout",)
    await git("worktree", "add", "-q", *checkout, "-b", branch, str(path), head, cwd=repository)
    admin = await anyio.to_thread.run_sync(admin_dir, await common_dir(repository), path)
    # The agent works in the same folder of the worktree as workingDirectory is in the repo.
    inner = config.directory.relative_to(repository)
    record = WorkspaceRecord(
        principal=principal,
        context_id=context_id,
        mode="worktree",
        path=str(path / inner) if str(inner) != "." else str(path),
        branch=branch,
        base=base,
        created_at=datetime.now(UTC),
        git_dir=str(admin),
    )
    made = Workspace(record, admin, path)
    if start is not None:
        await _check_out(made, start)  # the objects are the repository's: nothing to fetch
    return made


async def copy(
    config: WorkspaceConfig,
    principal: str,
    context_id: str,
    path: Path,
    start: Start | None = None,
) -> Workspace:
    git_dir = path.with_name(path.name + ".git")
    branch = f"a2a/{branch_slug(context_id)}"
    where = ("--git-dir", str(git_dir), "--work-tree", str(path))
    if start is None:
        source = config.directory
        await anyio.to_thread.run_sync(
            lambda: shutil.copytree(
                source, path, symlinks=True, ignore=shutil.ignore_patterns(".git")
            )
        )
        await git(*where, "init", "-q", "-b", branch)
        await git(*where, "add", "-A")
        await git(
            *IDENTITY,
            *where,
            "commit",
            "-q",
            "--allow-empty",
            "--no-verify",
            "-m",
            "a2a-wrapper: the copy's base",
        )
        base = (await git(*where, "rev-parse", "HEAD")).decode().strip()
    else:
        await anyio.Path(path).mkdir()
        await git(*where, "init", "-q", "-b", branch)
        # The source's git directory is the daemon's (beside the principal's folder, out of
        # the agent's reach); the state commit is wanted by id, so no ref is added there.
        await git(
            "-c",
            "uploadpack.allowAnySHA1InWant=true",
            *where,
            "fetch",
            "-q",
            "--no-tags",
            "--no-write-fetch-head",
            str(start.git_dir),
            start.state,
        )
        await git(*where, "update-ref", f"refs/heads/{branch}", start.head)
        base = start.base
    record = WorkspaceRecord(
        principal=principal,
        context_id=context_id,
        mode="copy",
        path=str(path),
        branch=branch,
        base=base,
        created_at=datetime.now(UTC),
        git_dir=str(git_dir),
    )
    made = Workspace(record, git_dir, path)
    if start is not None:
        await _check_out(made, start)
    return made


async def _check_out(workspace: Workspace, start: Start) -> None:
    """The source's files into the fresh work tree, then the index back to the branch's
    commit: what the source had not committed is uncommitted in the fork too."""
    where = workspace.git_args
    await git(*where, "read-tree", "-u", "--reset", f"{start.state}^{{tree}}")
    await git(*where, "read-tree", start.head)


async def _free_branch(repository: Path, context_id: str) -> str:
    """`a2a/<context>`, unless that is no valid branch name, is longer than `BRANCH_MAX` or
    is taken (a kept branch of an expired workspace, another principal's context of the same
    id)."""
    wanted = f"a2a/{context_id}"
    if len(wanted.encode()) > BRANCH_MAX:
        wanted = f"a2a/{branch_slug(context_id)}"
    try:
        await git("check-ref-format", "--branch", wanted, cwd=repository)
    except GitError:
        wanted = f"a2a/{branch_slug(context_id)}"
    candidate, n = wanted, 1
    while True:
        try:
            await git("rev-parse", "--verify", "--quiet", f"refs/heads/{candidate}", cwd=repository)
        except GitError:
            return candidate
        n += 1
        candidate = f"{wanted}-{n}"
