"""Workspace edge cases of issue 31 (items 9, 11, 17): patch names read as git reads them,
a valid bounded branch for any context id, maxPatchBytes over a message's patches together,
a hard link to an outside file reported as such, and a workspace whose save failed at expiry
kept, listed and retried."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.bindings.http.keys import SERVICE
from tests.conftest import MakeClient
from tests.support.git_repo import git, make_repository
from tests.support.hostile_git import HostileBackend
from tests.support.wire import call, user_message
from tests.test_sessions import FakeClock
from tests.test_workspaces import (
    COMPLETED,
    changes,
    patch_part,
    send,
    settings,
    workspace_of,
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(
        tmp_path / "repo", {"notes.txt": "original\n", "src/app.py": "print('one')\n"}
    )


EVIL_PATCHES = {
    "quoted-octal-git-dir": (
        'diff --git "a/\\056git/hooks/post-commit" "b/\\056git/hooks/post-commit"\n'
        "new file mode 100755\n--- /dev/null\n"
        '+++ "b/\\056git/hooks/post-commit"\n@@ -0,0 +1 @@\n+touch owned\n',
        "inside .git",
    ),
    "quoted-octal-climb": (
        '--- a/notes.txt\n+++ "b/\\056\\056/x"\n@@ -1 +1 @@\n-original\n+x\n',
        "outside the workspace",
    ),
    "quoted-rename": (
        "diff --git a/notes.txt b/notes.txt\nsimilarity index 100%\n"
        'rename from notes.txt\nrename to "\\056\\056/x"\n',
        "outside the workspace",
    ),
    "timestamp": (
        "diff --git a/notes.txt b/notes.txt\n"
        "--- a/notes.txt\t2026-01-01 00:00:00.000000000 +0000\n"
        "+++ b/.git/hooks/post-commit\t2026-01-01 00:00:00.000000000 +0000\n"
        "@@ -1 +1 @@\n-original\n+x\n",
        "inside .git",
    ),
    "spaces": (
        "--- a/notes.txt\n+++ b/.git/hooks/post commit\n@@ -1 +1 @@\n-original\n+x\n",
        "inside .git",
    ),
}


@pytest.mark.parametrize("name", list(EVIL_PATCHES))
async def test_a_patch_name_git_would_refuse_is_invalid_params_however_it_is_written(
    name: str, tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    patch, says = EVIL_PATCHES[name]
    client = await make_client(settings(tmp_path, repo))
    message = user_message("go", contextId="evil")
    message["parts"].append(patch_part(patch))
    body = await call(client, "SendMessage", {"message": message})

    assert body.get("error", {}).get("code") == -32602, body
    assert says in body["error"]["message"]
    assert (await call(client, "ListTasks", {"contextId": "evil"}))["result"]["tasks"] == []


async def test_quoted_names_and_names_with_spaces_still_apply(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    git(repo, "mv", "notes.txt", "my notes.txt")
    git(repo, "commit", "-q", "-m", "a name with a space")
    client = await make_client(settings(tmp_path, repo))
    spaced = "--- a/my notes.txt\n+++ b/my notes.txt\n@@ -1 +1 @@\n-original\n+spaced\n"
    quoted = 'diff --git "a/src/app.py" "b/src/app.py"\n--- "a/src/app.py"\n'
    quoted += "+++ \"b/src/app.py\"\n@@ -1 +1 @@\n-print('one')\n+print('two')\n"
    task = await send(client, "ok", "read: my notes.txt", patch_part(spaced), patch_part(quoted))

    assert task["status"]["state"] == COMPLETED, task
    where = Path(workspace_of(task)["path"])
    assert (where / "src" / "app.py").read_text() == "print('two')\n"


async def test_max_patch_bytes_holds_for_a_messages_patches_together(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo, maxPatchBytes=1024))
    one = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-original\n+" + "x" * 500 + "\n"
    message = user_message("go", contextId="big")
    message["parts"] += [patch_part(one), patch_part(one), patch_part(one)]
    body = await call(client, "SendMessage", {"message": message})

    assert body.get("error", {}).get("code") == -32602, body
    assert "workspace.maxPatchBytes" in body["error"]["message"]


@pytest.mark.parametrize("context_id", ["a2a/../../x", "x" * 300, "ünï code.lock", "-", "a..b@{c"])
async def test_any_context_id_gets_a_valid_bounded_branch(
    context_id: str, tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo))
    task = await send(client, context_id, "write: notes.txt=edited")

    assert task["status"]["state"] == COMPLETED, task
    branch = workspace_of(task)["branch"]
    assert len(branch.encode()) <= 100
    git(repo, "check-ref-format", "--branch", branch)
    assert git(repo, "show", f"{branch}:notes.txt") == "original\n"


async def test_a_hard_link_to_an_outside_file_is_reported_as_such_not_its_content(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET\n")
    hostile = HostileBackend()
    hostile.tamper["link"] = lambda workspace: os.link(secret, workspace / "leak.txt")
    client = await make_client(settings(tmp_path, repo), backend_=hostile)
    task = await send(client, "link", "write: notes.txt=mine")

    assert task["status"]["state"] == COMPLETED
    data, patch = changes(task)
    assert sorted(f["path"] for f in data["files"]) == ["leak.txt", "notes.txt"]
    assert "TOP SECRET" not in patch
    assert "hard link to a file outside the workspace" in patch
    assert "+mine" in patch


def _listing(tmp_path: Path, work: Path) -> list[str]:
    config = tmp_path / "config.json"
    config.write_text(
        json.dumps(
            {
                "backend": "claude",
                "claude": {"workingDirectory": str(work)},
                "storage": {"path": str(tmp_path / "state" / "tasks.sqlite3")},
                "workspace": {"mode": "worktree"},
            }
        )
    )
    done = subprocess.run(  # noqa: S603 - argv, no shell
        [sys.executable, "-m", "core.cli", "workspaces", str(config)],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.splitlines()


async def test_a_workspace_whose_save_failed_at_expiry_is_listed_and_retried(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    clock = FakeClock()
    config = settings(tmp_path, repo)
    config = config.model_copy(
        update={"session": config.session.model_copy(update={"ttl": 1000, "cleanup_interval": 0})}
    )
    client = await make_client(config, clock=clock)
    task = await send(client, "kept", "write: notes.txt=unsaved work")
    where = Path(workspace_of(task)["path"])
    patches = tmp_path / "state" / "workspace-patches"
    patches.write_text("a file where the patches folder goes: the save fails")
    clock.advance(seconds=2)
    sweeps: Any = client.app[SERVICE].sessions

    assert await sweeps.sweep() == 1
    assert (where / "notes.txt").read_text() == "unsaved work\n", "kept, not lost"
    header, row = await anyio.to_thread.run_sync(_listing, tmp_path, repo)
    assert row.split("\t")[0] == "kept"
    assert row.split("\t")[header.split("\t").index("STATE")] == "expired-unsaved"

    patches.unlink()
    await sweeps.sweep()

    assert not await anyio.Path(where).exists()
    saved = list(patches.iterdir())
    assert len(saved) == 1
    assert "+unsaved work" in saved[0].read_text()
    assert await anyio.to_thread.run_sync(_listing, tmp_path, repo) == ["no workspaces"]
