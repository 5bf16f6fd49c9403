"""Where a workspace's pieces are, found from the daemon's side: a worktree's admin directory
and root from the repository (never from the worktree's `.git`, which the agent can rewrite),
and the files of a work tree that reach outside it (symbolic and hard links)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import anyio

from core.workspaces.git import git

OUTSIDE_LINK_NOTE = (
    b"(a2a-wrapper: this file is a hard link to a file outside the workspace; "
    b"its content is not reported)\n"
)


class NoWorktreeError(LookupError):
    """The repository has no worktree at the path asked about."""


def admin_dir(common: Path, path: Path) -> Path:
    """The per-worktree admin directory (`<common>/worktrees/<name>`) of the worktree whose
    root is `path` or holds it, found from the repository's side: each admin directory's
    `gitdir` file names its worktree."""
    wanted = Path(os.path.realpath(path))
    found: list[tuple[int, Path]] = []
    for admin in (common / "worktrees").iterdir():
        if not (admin / "gitdir").is_file():
            continue
        root = worktree_of(admin)
        if root == wanted or root in wanted.parents:
            found.append((len(root.parts), admin))
    if not found:
        raise NoWorktreeError(f"no worktree of the repository is at {path}")
    return max(found)[1]


def worktree_file(admin: Path) -> str:
    named = (admin / "gitdir").read_text().strip()
    return os.path.realpath(admin / named)  # absolute, or (newer git) relative to `admin`


def common_of(admin: Path) -> Path:
    """The repository's shared git directory, from an admin directory's `commondir`."""
    return Path(os.path.realpath(admin / (admin / "commondir").read_text().strip()))


def worktree_of(admin: Path) -> Path:
    """The root of the worktree an admin directory belongs to."""
    return Path(worktree_file(admin)).parent


def outside_links(top: Path, candidates: list[str]) -> list[str]:
    """Those of `candidates` (paths under `top`) that are hard-linked to a file outside the
    candidates: more links than are among them. Only the files that differ from HEAD are
    candidates (an unchanged file reveals nothing), so no folder is walked."""
    found: dict[tuple[int, int], list[str]] = {}
    links: dict[tuple[int, int], int] = {}
    for name in candidates:
        try:
            info = (top / name).lstat()
        except OSError:
            continue
        if info.st_nlink > 1 and stat.S_ISREG(info.st_mode):
            key = (info.st_dev, info.st_ino)
            found.setdefault(key, []).append(name)
            links[key] = info.st_nlink
    return [p for key, names in found.items() if links[key] > len(names) for p in names]


def through_link(root: Path, path: str) -> bool:
    """Whether `path` (relative to `root`) passes through a symbolic link, or is one."""
    current = root
    for part in Path(path).parts:
        current = current / part
        if current.is_symlink():
            return True
    return False


def size(path: Path) -> int:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += (Path(folder) / name).lstat().st_size
            except OSError:
                continue
    return total


async def mask_outside_links(
    git_args: tuple[str, ...], top: Path, env: dict[str, str]
) -> list[str]:
    """Stage each file of the index `env` names that is hard-linked to a file outside the
    work tree as a note saying so, never with that file's content (which the agent may not
    otherwise read); returns those files."""
    listed = await git(
        *git_args, "diff-index", "--cached", "--no-renames", "--name-only", "-z", "HEAD", env=env
    )
    changed = [p for p in listed.decode("utf-8", "surrogateescape").split("\0") if p]
    tracked = await anyio.to_thread.run_sync(outside_links, top, changed)
    if not tracked:
        return []
    blob = (await git(*git_args, "hash-object", "-w", "--stdin", stdin=OUTSIDE_LINK_NOTE)).strip()
    info = b"".join(
        b"100644 " + blob + b"\t" + p.encode("utf-8", "surrogateescape") + b"\n" for p in tracked
    )
    await git(*git_args, "update-index", "--index-info", env=env, stdin=info)
    return tracked
