"""A fork's workspace (issue 37): a new context whose first turn forks another context of
the same principal gets a worktree or copy branched from the source workspace's state now,
its uncommitted edits and untracked files included (uncommitted in the fork too), the
source untouched; a hostile `.git` in the source runs nothing; another principal's
workspace is never read. Real git; the turn's metadata is set as the engine sets it, and
once end to end through the daemon with the echo agent."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from core import registry
from core.backend import TextContent, Turn
from core.engine.turn.plugins import StopTurnError
from core.storage.memory import InMemoryWorkspaceStore
from core.workspaces.config import WorkspaceConfig
from core.workspaces.manager import WorkspaceManager
from core.workspaces.plugin import WorkspaceHooks
from tests.conftest import MakeClient, make_settings
from tests.support.git_repo import git, make_repository
from tests.support.hostile_git import own_git_dir
from tests.test_workspace_escape import configs
from tests.test_workspaces import COMPLETED, changes, send, workspace_of

MODES = ["worktree", "copy"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    files = {"notes.txt": "original\n", "src/app.py": "print('one')\n", "keep.txt": "kept\n"}
    return make_repository(tmp_path / "repo", files)


def hooks(tmp_path: Path, repo: Path, mode: str) -> WorkspaceHooks:
    config = WorkspaceConfig(
        mode=mode,  # type: ignore[arg-type]
        source=repo,
        root=tmp_path / "ws",
        patches=tmp_path / "patches",
    )
    return WorkspaceHooks(WorkspaceManager(config, InMemoryWorkspaceStore()))


def turn(context_id: str, *, principal: str = "alice", fork_from: str | None = None) -> Turn:
    """A turn as the engine hands it to the workspace hooks; a fork's first turn carries the
    source context the engine checked in `a2aWrapper.forkFrom`."""
    metadata: dict[str, Any] = {"a2aWrapper": {"forkFrom": fork_from}} if fork_from else {}
    return Turn(
        principal=principal,
        context_id=context_id,
        task_id=uuid.uuid4().hex,
        message_id=uuid.uuid4().hex,
        session_id=None,
        parts=(TextContent("go"),),
        metadata=metadata,
    )


async def workspace(plugin: WorkspaceHooks, of: Turn) -> Path:
    prepared = await plugin.prepare(of)
    await plugin.release(of)
    assert prepared.cwd is not None
    return prepared.cwd


def files(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def status(where: Path, mode: str) -> str:
    """`git status` of a workspace as the agent would see it in its work tree (the daemon's
    own git directory for a copy, which the agent has none of)."""
    if mode == "worktree":
        return git(where, "status", "--porcelain")
    git_dir = where.with_name(where.name + ".git")
    return git(where, f"--git-dir={git_dir}", f"--work-tree={where}", "status", "--porcelain")


def refs(git_dir: Path) -> list[str]:
    """The refs of the source's git directory (a worktree's repository also holds the
    fork's new branch, which is no change to the source)."""
    listed = git(git_dir, f"--git-dir={git_dir}", "for-each-ref").splitlines()
    return [line for line in listed if not line.endswith("a2a/forked")]


def git_dir_of(where: Path, mode: str) -> Path:
    if mode == "worktree":
        common = git(where, "rev-parse", "--path-format=absolute", "--git-common-dir")
        return Path(common.strip())
    return where.with_name(where.name + ".git")


@pytest.mark.parametrize("mode", MODES)
async def test_a_fork_keeps_the_sources_uncommitted_edits_and_leaves_the_source_alone(
    mode: str, tmp_path: Path, repo: Path
) -> None:
    plugin = hooks(tmp_path, repo, mode)
    source = await workspace(plugin, turn("src"))
    (source / "notes.txt").write_text("edited in the source\n")  # tracked, not committed
    (source / "src" / "new.py").write_text("print('untracked')\n")  # untracked
    (source / "keep.txt").unlink()  # deleted, not committed
    before = (files(source), status(source, mode), refs(git_dir_of(source, mode)))

    fork = await workspace(plugin, turn("forked", fork_from="src"))

    assert fork != source
    assert files(fork) == before[0]
    # What the source had not committed is uncommitted in the fork too.
    assert status(fork, mode) == before[1] == " D keep.txt\n M notes.txt\n?? src/new.py\n"
    (fork / "notes.txt").write_text("the fork's own way\n")
    (fork / "fork-only.txt").write_text("only here\n")
    assert (files(source), status(source, mode), refs(git_dir_of(source, mode))) == before
    assert not (source / "fork-only.txt").exists()
    # The fork's own next turn finds its workspace as it left it (no second fork).
    again = await workspace(plugin, turn("forked", fork_from="src"))
    assert again == fork
    assert (fork / "notes.txt").read_text() == "the fork's own way\n"


@pytest.mark.parametrize("mode", MODES)
async def test_a_hostile_git_folder_in_the_source_runs_nothing_on_fork(
    mode: str, tmp_path: Path, repo: Path
) -> None:
    marker = tmp_path / "owned-by-agent"
    plugin = hooks(tmp_path, repo, mode)
    source = await workspace(plugin, turn("src"))
    own_git_dir(source, repo, "".join(configs(marker, source / ".git").values()))
    (source / ".gitattributes").write_text("* filter=own\n")
    for name in ("post-checkout", "post-commit", "reference-transaction", "pre-auto-gc"):
        hook = source / ".git" / "hooks" / name
        hook.parent.mkdir(parents=True, exist_ok=True)
        hook.write_text(f"#!/bin/sh\ntouch {marker}\n")
        hook.chmod(0o755)
    (source / "notes.txt").write_text("edited before the fork\n")

    fork = await workspace(plugin, turn("forked", fork_from="src"))

    assert not marker.exists(), "a command of the source's own .git ran on the host"
    assert (fork / "notes.txt").read_text() == "edited before the fork\n"
    assert (fork / ".gitattributes").read_text() == "* filter=own\n"
    # The source's own `.git` folder is the agent's, never part of the state branched from.
    assert not (fork / ".git").is_dir()
    assert (source / ".git" / "config").is_file()


async def test_a_fork_of_another_principals_context_reads_nothing_of_it(
    tmp_path: Path, repo: Path
) -> None:
    plugin = hooks(tmp_path, repo, "worktree")
    source = await workspace(plugin, turn("src", principal="alice"))
    (source / "notes.txt").write_text("alice's secret\n")

    with pytest.raises(StopTurnError, match="has no workspace"):
        await plugin.prepare(turn("stolen", principal="bob", fork_from="src"))

    assert [p.name for p in (tmp_path / "ws").iterdir() if p.name.startswith("bob")] == []
    assert "a2a/stolen" not in git(repo, "branch", "--list")


async def test_a_fork_of_a_context_without_a_workspace_fails_saying_why(
    tmp_path: Path, repo: Path
) -> None:
    plugin = hooks(tmp_path, repo, "copy")

    with pytest.raises(StopTurnError, match="nothing to branch from"):
        await plugin.prepare(turn("forked", fork_from="never-ran"))


async def test_a_fork_through_the_daemon_works_on_the_sources_uncommitted_state(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    settings = make_settings(
        backend="echo",
        echo={"workingDirectory": str(repo), "chunkDelay": 0},
        storage={"kind": "sqlite", "path": str(tmp_path / "state" / "tasks.sqlite3")},
        workspace={"mode": "worktree"},
    )
    echo = registry.create_backend("echo", settings.backend_config())
    client = await make_client(settings, backend_=echo)
    first = await send(client, "src", "write: notes.txt\nthe source's edit")
    source = Path(workspace_of(first)["path"])
    (source / "draft.txt").write_text("untracked in the source\n")  # the agent's, uncommitted
    before = (files(source), status(source, "worktree"))

    fork = {"a2aWrapper": {"forkFrom": "src"}}
    forked = await send(client, "fork", "write: fork.txt\nonly in the fork", metadata=fork)
    where = Path(workspace_of(forked)["path"])

    assert forked["status"]["state"] == COMPLETED, forked
    assert forked["metadata"]["a2aWrapper"]["forkedFrom"] == {"contextId": "src"}
    assert where != source
    assert (where / "notes.txt").read_text() == "the source's edit\n"
    assert (where / "draft.txt").read_text() == "untracked in the source\n"
    assert (where / "fork.txt").read_text() == "only in the fork\n"
    assert workspace_of(forked)["base"] == workspace_of(first)["base"]
    data, patch = changes(forked)  # the fork's turn: its own edit only
    assert [f["path"] for f in data["files"]] == ["fork.txt"] and "+only in the fork" in patch
    assert (files(source), status(source, "worktree")) == before
