"""Making, diffing, patching and removing the workspace of a context (git as subprocesses).

A worktree is `git worktree add -b a2a/<context> <root>/<principal>/<slug> <baseRef>` of the
repository holding workingDirectory (a folder per principal, which a sandbox binds whole). A copy
is workingDirectory copied to `<root>/<principal>/<slug>`, with a git directory of its own at
`<root>/<slug>.git` (outside the principal's folder, so the agent never sees it) whose first
commit is the base. Either way a workspace is diffed the same way: its state is
written as a tree through a private index (`snapshot`), never touching the real index or
HEAD, and two trees are compared.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import structlog

from core.storage.contracts import WorkspaceRecord, WorkspaceStore
from core.workspaces import making
from core.workspaces.config import WorkspaceConfig
from core.workspaces.git import IDENTITY, GitError, common_dir, git, toplevel
from core.workspaces.making import Start, Workspace, WorkspaceError
from core.workspaces.naming import principal_dir, slug
from core.workspaces.patches import Patch, conflicting
from core.workspaces.paths import (
    NoWorktreeError,
    admin_dir,
    common_of,
    mask_outside_links,
    size,
    through_link,
    worktree_of,
)

log = structlog.get_logger(__name__)

_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "modified"}


@dataclass(frozen=True)
class FileChanged:
    path: str
    status: str
    additions: int | None
    deletions: int | None


@dataclass(frozen=True)
class Changes:
    base: str
    head: str
    files: tuple[FileChanged, ...]
    patch: bytes
    commit: str | None = None


class WorkspaceManager:
    def __init__(self, config: WorkspaceConfig, store: WorkspaceStore) -> None:
        self.config = config
        self._store = store
        self._making = anyio.Lock()

    # ----- the workspace of a context -----------------------------------------------------

    async def ensure(
        self, principal: str, context_id: str, *, fork_from: str | None = None
    ) -> Workspace:
        """The context's workspace, made now when it has none (or lost its directory);
        `fork_from`: a context of the same principal whose workspace, as it is now, a new
        one is branched from (a context that has its workspace already keeps it)."""
        record = await self._store.get(principal, context_id)
        if record is not None and await anyio.Path(record.path).is_dir():
            # In use again: no longer expired (what could not be saved is still in it).
            await anyio.Path(self._expired_marker(record)).unlink(missing_ok=True)
            return await self.open(record)
        async with self._making:
            if record is not None:
                log.warning("workspace.missing", context_id=context_id, path=record.path)
                await self._store.delete(principal, context_id)
            start = None if fork_from is None else await self._start(principal, fork_from)
            made = await self._make(principal, context_id, start)
        await self._store.put(made.record)
        log.info(
            "workspace.created", context_id=context_id, path=made.record.path, fork_of=fork_from
        )
        return made

    async def _start(self, principal: str, source: str) -> Start:
        """Where a fork of `source` (a context of `principal`: only that principal's records
        are looked up) starts: its workspace's state now, taken by the daemon's snapshot."""
        record = await self._store.get(principal, source)
        if (
            record is None
            or record.principal != principal
            or not await anyio.Path(record.path).is_dir()
        ):
            raise WorkspaceError(
                "The context this one forks from has no workspace (it expired, or never ran "
                "a turn), so there is nothing to branch from; start a new context instead."
            )
        if record.mode != self.config.mode:
            raise WorkspaceError(
                f"The context this one forks from has a {record.mode} workspace, and this "
                f"daemon makes {self.config.mode} workspaces now: it cannot be branched from."
            )
        workspace = await self.open(record)
        head = await self.head(workspace)
        tree = await self.snapshot(workspace)
        # A commit of the daemon's, in the source's object database only (no ref moves), so
        # a copy can fetch the state by its id.
        message = f"a2a-wrapper: context {source} as it was forked"
        state = await git(
            *IDENTITY, *workspace.git_args, "commit-tree", tree, "-p", head, "-m", message
        )
        return Start(head, state.decode().strip(), record.base, workspace.git_dir)

    async def _make(self, principal: str, context_id: str, start: Start | None) -> Workspace:
        config = self.config
        count = len(await self._store.all())
        if count >= config.max_workspaces:
            raise WorkspaceError(
                f"This daemon already has {count} workspaces (workspace.maxWorkspaces is "
                f"{config.max_workspaces}); wait until one expires, or raise the limit."
            )
        name = slug(principal, context_id)
        path = config.root / principal_dir(principal) / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            make = making.worktree if config.mode == "worktree" else making.copy
            return await make(config, principal, context_id, path, start)
        except OSError as exc:
            await self._discard(path, config.root / f"{name}.git")
            raise _disk_error(exc) from exc
        except GitError as exc:
            await self._discard(path, config.root / f"{name}.git")
            if "No space left" in exc.stderr:
                raise _disk_error(OSError(errno.ENOSPC, "no space")) from exc
            log.exception("workspace.create_failed", context_id=context_id)
            raise WorkspaceError(
                "The daemon could not make this context's workspace "
                f"(workspace.mode {config.mode}); the daemon log says why."
            ) from exc

    async def open(self, record: WorkspaceRecord) -> Workspace:
        """The workspace of a record, with the git directory and work tree the daemon made
        (a worktree recorded before its admin directory was stored is found from the
        repository's side, never from its `.git`)."""
        if record.mode != "worktree":
            if record.git_dir is None:
                raise WorkspaceError("This context's workspace has no git directory recorded.")
            return Workspace(record, Path(record.git_dir), Path(record.path))
        if record.git_dir is not None:
            admin = Path(record.git_dir)
        else:
            repository = await toplevel(self.config.directory)
            if repository is None:
                raise WorkspaceError("workingDirectory is no longer in a git repository.")
            common = await common_dir(repository)
            try:
                admin = await anyio.to_thread.run_sync(admin_dir, common, Path(record.path))
            except NoWorktreeError as exc:
                raise WorkspaceError("This context's worktree is no longer registered.") from exc
        top = await anyio.to_thread.run_sync(worktree_of, admin)
        path = Path(await anyio.Path(record.path).resolve())
        if path != top and top not in path.parents:
            raise WorkspaceError("This context's worktree is no longer where it was made.")
        return Workspace(record, admin, top)

    # ----- what changed -------------------------------------------------------------------

    async def snapshot(self, workspace: Workspace) -> str:
        """The workspace's files as a tree id (tracked and untracked, ignored ones left out),
        written through a private index: the real index and HEAD stay as they are."""
        where = workspace.git_args
        await anyio.Path(self.config.root).mkdir(parents=True, exist_ok=True)
        index = self.config.root / f".index-{uuid.uuid4().hex}"
        try:
            real = Path(
                (await git(*where, "rev-parse", "--path-format=absolute", "--git-path", "index"))
                .decode()
                .strip()
            )
            has_index = await anyio.Path(real).is_file()
            if has_index:
                # Its stat data spares git rehashing every unchanged file. copy2 keeps its
                # mtime, which git's racy-clean check compares with the files' (a file
                # rewritten in the second the index was written, at the same size, would
                # otherwise pass for unchanged).
                shutil.copy2(real, index)
            env = {"GIT_INDEX_FILE": str(index)}
            if not has_index:
                await git(*where, "read-tree", "HEAD", env=env)
            await git(*where, "add", "-A", env=env)
            masked = await mask_outside_links(where, workspace.top, env)
            if masked:
                log.warning("workspace.outside_link", context_id=workspace.record.context_id)
            return (await git(*where, "write-tree", env=env)).decode().strip()
        finally:
            index.unlink(missing_ok=True)

    async def tree_of(self, workspace: Workspace, revision: str) -> str:
        return (
            (await git(*workspace.git_args, "rev-parse", f"{revision}^{{tree}}")).decode().strip()
        )

    async def head(self, workspace: Workspace) -> str:
        return (await git(*workspace.git_args, "rev-parse", "HEAD")).decode().strip()

    async def changes(self, workspace: Workspace, before: str, after: str) -> Changes | None:
        """What changed from tree `before` to tree `after`, None when nothing did."""
        if before == after:
            return None
        where = workspace.git_args
        diff = ("diff", "--no-color", "--no-ext-diff", "--no-textconv", "--no-renames")
        patch = await git(*where, *diff, "--binary", before, after)
        numstat = (await git(*where, *diff, "--numstat", "-z", before, after)).split(b"\0")
        statuses = (await git(*where, *diff, "--name-status", "-z", before, after)).split(b"\0")
        counts: dict[str, tuple[int | None, int | None]] = {}
        for entry in numstat:
            if not entry:
                continue
            added, deleted, name = entry.decode("utf-8", "replace").split("\t", 2)
            counts[name] = (_count(added), _count(deleted))
        files = []
        for status, raw in zip(statuses[::2], statuses[1::2], strict=False):
            path = raw.decode("utf-8", "replace")
            additions, deletions = counts.get(path, (None, None))
            files.append(
                FileChanged(
                    path, _STATUS.get(status.decode()[:1], "modified"), additions, deletions
                )
            )
        return Changes(workspace.record.base, await self.head(workspace), tuple(files), patch)

    async def commit(self, workspace: Workspace, message: str, tree: str) -> str:
        """Commit `tree` (the workspace's snapshot) on the workspace's own branch
        (workspace.commitTurns): plumbing on the daemon-recorded branch, so no hook runs and
        no other branch moves, whatever HEAD says; the workspace's index follows when its
        HEAD is that branch."""
        where = workspace.git_args
        ref = f"refs/heads/{workspace.record.branch}"
        parent = (await git(*where, "rev-parse", "--verify", f"{ref}^{{commit}}")).decode().strip()
        made = await git(*IDENTITY, *where, "commit-tree", tree, "-p", parent, "-m", message)
        commit = made.decode().strip()
        await git(*where, "update-ref", "-m", message, ref, commit, parent)
        try:
            head = (await git(*where, "symbolic-ref", "-q", "HEAD")).decode().strip()
        except GitError:
            head = ""
        if head == ref:
            await git(*where, "read-tree", commit)
            with contextlib.suppress(GitError):
                await git(*where, "update-index", "-q", "--refresh")
        return commit

    # ----- a caller's patch ---------------------------------------------------------------

    async def apply(self, workspace: Workspace, patch: Patch) -> None:
        """Apply `patch` all or nothing: WorkspaceError naming the files when it does not
        apply (or would write through a symbolic link), the workspace untouched."""
        # Patch paths are relative to the work tree's top (a worktree's agent may work in a
        # sub-folder of it, as workingDirectory is in its repository).
        top = workspace.top
        linked = [p for p in patch.paths if through_link(top, p)]
        if linked:
            raise WorkspaceError(
                "The patch was refused: it writes through a symbolic link ("
                + ", ".join(linked)
                + "); nothing was changed."
            )
        apply = (*workspace.git_args, "apply", "--whitespace=nowarn")
        try:
            await git(*apply, "--check", "-", cwd=top, stdin=patch.data)
        except GitError as exc:
            conflicts = conflicting(exc.stderr) or list(patch.paths)
            raise WorkspaceError(
                "The patch does not apply to this context's workspace (conflicts in "
                + ", ".join(conflicts)
                + "); nothing was changed."
            ) from exc
        await git(*apply, "-", cwd=top, stdin=patch.data)

    # ----- expiry and listing -------------------------------------------------------------

    async def remove(self, principal: str, context_id: str) -> Path | None:
        """Remove the context's workspace (and its branch unless keepBranches), first saving
        what it holds beyond the base (beyond HEAD when the branch is kept) as a patch in the
        state directory; returns that patch's path, None when nothing needed saving. When the
        save fails the workspace is kept, marked expired, and `retry_expired` tries again."""
        record = await self._store.get(principal, context_id)
        if record is None:
            return None
        saved = None
        if await anyio.Path(record.path).is_dir():
            try:
                workspace = await self.open(record)
                saved = await self._save(workspace)
            except (GitError, OSError, WorkspaceError):
                log.exception("workspace.save_failed", context_id=context_id)
                await anyio.to_thread.run_sync(self._mark_expired, record)
                return None  # keep it: removing it would lose what could not be saved
            await self._delete(workspace)
        await self._store.delete(principal, context_id)
        await anyio.Path(self._expired_marker(record)).unlink(missing_ok=True)
        log.info("workspace.removed", context_id=context_id, saved=str(saved) if saved else None)
        return saved

    async def retry_expired(self) -> int:
        """Try again to remove each workspace whose save failed when it expired; returns how
        many are gone now (the session sweep calls this)."""
        removed = 0
        for record in await self._store.all():
            if not await anyio.Path(self._expired_marker(record)).is_file():
                continue
            await self.remove(record.principal, record.context_id)
            if await self._store.get(record.principal, record.context_id) is None:
                removed += 1
        return removed

    def _expired_marker(self, record: WorkspaceRecord) -> Path:
        # Beside the workspaces, not in one: the agent cannot make or remove a marker.
        return self.config.root / ".expired" / slug(record.principal, record.context_id)

    def _mark_expired(self, record: WorkspaceRecord) -> None:
        marker = self._expired_marker(record)
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.write_text(datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ\n"))

    async def _save(self, workspace: Workspace) -> Path | None:
        tree = await self.snapshot(workspace)
        # A kept branch keeps the turns committed on it; a removed one takes them along, so
        # the patch then holds everything since the base.
        since = "HEAD" if self.config.keep_branches else workspace.record.base
        patch = await git(
            *workspace.git_args,
            "diff",
            "--binary",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            since,
            tree,
        )
        if not patch:
            return None
        self.config.patches.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        target = (
            self.config.patches
            / f"{slug(workspace.record.principal, workspace.record.context_id)}-{stamp}.patch"
        )
        target.write_bytes(patch)
        return target

    async def _delete(self, workspace: Workspace) -> None:
        """Delete what the daemon made, by the paths it recorded: the worktree's folder and
        admin directory (never `git worktree remove`, which would look at the worktree's
        `.git`), then its branch; or the copy and its git directory."""
        record = workspace.record
        if record.mode != "worktree":
            await self._discard(workspace.top, workspace.git_dir)
            return
        common = await anyio.to_thread.run_sync(common_of, workspace.git_dir)
        await self._discard(workspace.top, workspace.git_dir)
        if not self.config.keep_branches:
            await git("--git-dir", str(common), "branch", "-D", "-q", record.branch)

    async def _discard(self, *paths: Path) -> None:
        for path in paths:
            await anyio.to_thread.run_sync(partial(shutil.rmtree, path, ignore_errors=True))

    async def listing(self) -> list[tuple[WorkspaceRecord, int, bool]]:
        """Every workspace with its size in bytes and whether it expired but could not be
        saved (kept, and retried): what `a2a-wrapper workspaces` prints."""
        return [
            (
                r,
                await anyio.to_thread.run_sync(size, Path(r.path)),
                await anyio.Path(self._expired_marker(r)).is_file(),
            )
            for r in await self._store.all()
        ]


def _count(text: str) -> int | None:
    return None if text == "-" else int(text)  # "-": a binary file


def _disk_error(exc: OSError) -> WorkspaceError:
    if exc.errno == errno.ENOSPC:
        return WorkspaceError(
            "The disk holding workspace.root is full, so this context's workspace could not "
            "be made; free some space and send the message again."
        )
    log.error("workspace.create_failed", error=str(exc))
    return WorkspaceError(
        "The daemon could not make this context's workspace; the daemon log says why."
    )
