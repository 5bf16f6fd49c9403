"""An agent cannot reach past its workspace through git (issue 31, items 1-3 and 17): in
worktree mode the agent can rewrite its worktree's `.git` (make it a folder with a config of
its own, or point it elsewhere), and the daemon's git still reads only the repository's
configuration, runs no command the agent named, touches no other workspace and never the
original checkout. The agent is `HostileBackend`, doing as an edit-only agent could."""

from __future__ import annotations

import base64
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.bindings.http.keys import SERVICE
from core.storage.memory import InMemoryWorkspaceStore
from core.workspaces.config import WorkspaceConfig
from core.workspaces.manager import WorkspaceManager
from core.workspaces.naming import principal_dir, slug
from tests.conftest import Client, MakeClient, make_settings
from tests.support.git_repo import git, make_repository
from tests.support.hostile_git import HostileBackend, command, own_git_dir
from tests.support.wire import V1, call, user_message
from tests.test_sessions import FakeClock

COMPLETED = "TASK_STATE_COMPLETED"
TOKENS = [{"token": "tok-alice", "principal": "alice"}, {"token": "tok-bob", "principal": "bob"}]
ALICE = {**V1, "Authorization": "Bearer tok-alice"}
BOB = {**V1, "Authorization": "Bearer tok-bob"}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "repo", {"notes.txt": "original\n", "src/app.py": "x\n"})


@pytest.fixture
def hostile() -> HostileBackend:
    return HostileBackend()


def settings(tmp_path: Path, repo: Path, **workspace: Any) -> Any:
    return make_settings(
        backend="claude",
        claude={"workingDirectory": str(repo)},
        storage={"kind": "sqlite", "path": str(tmp_path / "state" / "tasks.sqlite3")},
        workspace={"mode": "worktree", **workspace},
        server={"maxConcurrentTurns": 4, "auth": {"tokens": TOKENS}},
    )


async def send(client: Client, context_id: str, text: str, who: dict[str, str]) -> Any:
    message = user_message(text, contextId=context_id, messageId=f"{context_id}-{text}")
    body = await call(client, "SendMessage", {"message": message}, headers=who)
    assert "result" in body, body
    return body["result"]["task"]


def changes(task: dict[str, Any]) -> tuple[dict[str, Any], str]:
    found = [a for a in task.get("artifacts", []) if a.get("name") == "changes"]
    assert len(found) == 1, task
    data, patch = found[0]["parts"]
    return data["data"], base64.b64decode(patch["raw"]).decode()


def path_of(task: dict[str, Any]) -> Path:
    return Path(task["metadata"]["a2aWrapper"]["workspace"]["path"])


def untouched(repo: Path, main: str) -> None:
    """The original checkout: `main` where it was, its index and files as committed."""
    assert git(repo, "rev-parse", "main").strip() == main
    assert git(repo, "status", "--porcelain") == ""


def configs(marker: Path, where: Path) -> dict[str, str]:
    hooks = where / "hooks"
    return {
        "fsmonitor": f'\tfsmonitor = "{command(marker)}"\n',
        "filter": f'[filter "own"]\n\tclean = "{command(marker)}"\n\tsmudge = cat\n',
        "hooksPath": f"\thooksPath = {hooks}\n",
    }


@pytest.mark.parametrize("variant", ["fsmonitor", "filter", "hooksPath"])
async def test_a_git_folder_of_the_agents_own_runs_none_of_its_commands(
    variant: str,
    tmp_path: Path,
    repo: Path,
    make_client: MakeClient,
    hostile: HostileBackend,
) -> None:
    marker = tmp_path / "owned-by-agent"
    main = git(repo, "rev-parse", "main").strip()

    def tamper(workspace: Path) -> None:
        if (workspace / ".git").is_dir():
            return
        own_git_dir(workspace, repo, configs(marker, workspace / ".git")[variant])
        (workspace / ".gitattributes").write_text("* filter=own\n")
        hook = workspace / ".git" / "hooks" / "post-commit"
        hook.parent.mkdir(parents=True)
        hook.write_text(f"#!/bin/sh\n{command(marker)}\n")
        hook.chmod(0o755)

    hostile.tamper["mine"] = tamper
    client = await make_client(settings(tmp_path, repo, commitTurns=True), backend_=hostile)
    first = await send(client, "mine", "write: notes.txt=first", ALICE)
    second = await send(client, "mine", "write: notes.txt=second", ALICE)

    assert first["status"]["state"] == second["status"]["state"] == COMPLETED
    assert not marker.exists(), f"the agent's {variant} command ran on the host"
    data, patch = changes(second)
    assert "-first" in patch and "+second" in patch
    assert git(repo, "rev-parse", "a2a/mine").strip() == data["commit"]
    assert git(repo, "show", "a2a/mine:notes.txt") == "second\n"
    untouched(repo, main)


async def test_a_git_folder_naming_another_workspace_neither_reads_nor_removes_it(
    tmp_path: Path, repo: Path, make_client: MakeClient, hostile: HostileBackend
) -> None:
    clock = FakeClock()
    config = settings(tmp_path, repo)
    config = config.model_copy(
        update={"session": config.session.model_copy(update={"ttl": 1000, "cleanup_interval": 0})}
    )
    client = await make_client(config, backend_=hostile, clock=clock)
    main = git(repo, "rev-parse", "main").strip()
    bob = tmp_path / "state" / "workspaces" / principal_dir("bob") / slug("bob", "ctx")
    hostile.tamper["ctx"] = lambda workspace: (
        own_git_dir(workspace, repo, f"\tworktree = {bob}\n")
        if bob.is_dir() and workspace != bob
        else None
    )
    await send(client, "ctx", "write: notes.txt=alice's first edit", ALICE)
    clock.advance(seconds=0.6)
    bobs = await send(client, "ctx", "write: bob-secret.txt=bob's own work", BOB)
    alices = await send(client, "ctx", "write: notes.txt=alice's edit", ALICE)
    clock.advance(seconds=0.6)
    expired = await client.app[SERVICE].sessions.sweep()
    again = await send(client, "ctx", "write: bob-more.txt=bob's later work", BOB)

    assert path_of(bobs) == bob
    assert alices["status"]["state"] == again["status"]["state"] == COMPLETED
    data, patch = changes(alices)
    assert [f["path"] for f in data["files"]] == ["notes.txt"]
    assert "bob" not in patch
    assert expired == 1, "alice's session expired, bob's is fresh"
    assert (bob / "bob-secret.txt").read_text() == "bob's own work\n"
    later, _ = changes(again)
    assert [f["path"] for f in later["files"]] == ["bob-more.txt"]
    assert not await anyio.Path(path_of(alices)).exists()
    saved = list((tmp_path / "state" / "workspace-patches").iterdir())
    assert len(saved) == 1
    assert "alice's edit" in saved[0].read_text()
    assert "bob" not in saved[0].read_text()
    branches = git(repo, "branch", "--format=%(refname:short)").split()
    assert branches == sorted([bobs["metadata"]["a2aWrapper"]["workspace"]["branch"], "main"])
    untouched(repo, main)


async def test_a_git_file_pointing_at_the_repository_commits_only_on_the_contexts_branch(
    tmp_path: Path, repo: Path, make_client: MakeClient, hostile: HostileBackend
) -> None:
    main = git(repo, "rev-parse", "main").strip()
    hostile.tamper["ctx"] = lambda workspace: (workspace / ".git").write_text(
        f"gitdir: {repo / '.git'}\n"
    )
    client = await make_client(settings(tmp_path, repo, commitTurns=True), backend_=hostile)
    task = await send(client, "ctx", "write: notes.txt=the agent's edit", ALICE)

    assert task["status"]["state"] == COMPLETED
    data, patch = changes(task)
    assert "+the agent's edit" in patch
    assert git(repo, "rev-parse", "a2a/ctx").strip() == data["commit"]
    assert git(repo, "show", "a2a/ctx:notes.txt") == "the agent's edit\n"
    untouched(repo, main)


async def test_a_worktree_recorded_before_its_admin_directory_was_is_found_from_the_repository(
    tmp_path: Path, repo: Path
) -> None:
    config = WorkspaceConfig(
        mode="worktree", source=repo / "src", root=tmp_path / "ws", patches=tmp_path / "p"
    )
    store = InMemoryWorkspaceStore()
    manager = WorkspaceManager(config, store)
    made = await manager.ensure("alice", "old")
    older = replace(made.record, git_dir=None)  # as a record of an earlier version
    (made.top / ".git").write_text(f"gitdir: {repo / '.git'}\n")  # the agent's doing

    opened = await manager.open(older)

    assert (opened.git_dir, opened.top) == (made.git_dir, made.top)
    assert made.git_dir.parent == repo / ".git" / "worktrees"
    assert opened.path == made.top / "src", "the agent works in workingDirectory's sub-folder"


async def test_in_copy_mode_a_git_folder_in_the_copy_runs_none_of_its_commands(
    tmp_path: Path, repo: Path, make_client: MakeClient, hostile: HostileBackend
) -> None:
    marker = tmp_path / "owned-by-agent"

    def tamper(workspace: Path) -> None:
        if not (workspace / ".git").is_dir():
            own_git_dir(workspace, repo, "".join(configs(marker, workspace / ".git").values()))
            (workspace / ".gitattributes").write_text("* filter=own\n")

    hostile.tamper["copied"] = tamper
    config = settings(tmp_path, repo, mode="copy", commitTurns=True)
    client = await make_client(config, backend_=hostile)
    task = await send(client, "copied", "write: notes.txt=copied edit", ALICE)

    assert task["status"]["state"] == COMPLETED
    assert not marker.exists()
    data, patch = changes(task)
    assert sorted(f["path"] for f in data["files"]) == [".gitattributes", "notes.txt"]
    assert "+copied edit" in patch
