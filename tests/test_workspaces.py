"""Workspaces through the real app and real git (issue 20): a context's turn runs in its own
worktree or copy, its changes come back as the `changes` artifact, a caller's patch is applied
first (or refused), and expiry removes the workspace after saving what it held.

The agent is the scripted backend (`write:`, `read:`, `write-block:` act on the turn's
directory); the settings name a built-in backend only for its block's workingDirectory, which
is what the daemon makes workspaces of (the real agents are the contract suite's).
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.bindings.http.keys import SERVICE
from core.cli import main
from tests.conftest import Client, MakeClient, make_settings
from tests.support.git_repo import git, make_repository
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend
from tests.support.wire import call, user_message
from tests.test_sessions import FakeClock

COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A git repository with one commit: notes.txt and src/app.py."""
    files = {"notes.txt": "original\n", "src/app.py": "print('one')\n"}
    return make_repository(tmp_path / "repo", files)


def settings(tmp_path: Path, work: Path, mode: str = "worktree", **workspace: Any) -> Any:
    return make_settings(
        backend="claude",
        claude={"workingDirectory": str(work)},
        storage={"kind": "sqlite", "path": str(tmp_path / "state" / "tasks.sqlite3")},
        workspace={"mode": mode, **workspace},
        server={"maxConcurrentTurns": 4},
    )


def patch_part(text: str, media_type: str = "text/x-diff") -> dict[str, Any]:
    return {"raw": base64.b64encode(text.encode()).decode(), "mediaType": media_type}


async def send(
    client: Client,
    context_id: str,
    text: str,
    *parts: dict[str, Any],
    metadata: dict[str, Any] | None = None,
    wait: bool = True,
) -> dict[str, Any]:
    message = user_message(text, contextId=context_id, messageId=f"{context_id}-{text}")
    message["parts"] = [*message["parts"], *parts]
    params: dict[str, Any] = {"message": message}
    if metadata is not None:
        params["metadata"] = metadata
    if not wait:
        params["configuration"] = {"returnImmediately": True}
    body = await call(client, "SendMessage", params)
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


async def finished(client: Client, task_id: str) -> dict[str, Any]:
    async def look() -> dict[str, Any]:
        task: dict[str, Any] = (await call(client, "GetTask", {"id": task_id}))["result"]
        return task

    return await until(look, lambda t: t["status"]["state"] in (COMPLETED, FAILED))


def changes(task: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The task's one `changes` artifact: its data part and its patch's text."""
    found = [a for a in task.get("artifacts", []) if a.get("name") == "changes"]
    assert len(found) == 1, task.get("artifacts")
    data, patch = found[0]["parts"]
    assert patch["filename"] == "changes.patch"
    assert patch["mediaType"] == "text/x-diff"
    return data["data"], base64.b64decode(patch["raw"]).decode()


def workspace_of(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]["workspace"]
    return section


def status_text(task: dict[str, Any]) -> str:
    text: str = task["status"]["message"]["parts"][0]["text"]
    return text


async def test_two_contexts_edit_one_file_at_once_each_in_its_own_worktree(
    tmp_path: Path, repo: Path, make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(settings(tmp_path, repo))
    one = await send(client, "alpha", "write-block: notes.txt=from alpha", wait=False)
    two = await send(client, "beta", "write-block: notes.txt=from beta", wait=False)
    with anyio.fail_after(10):
        # Both are inside their turn at once: worktree mode runs contexts in parallel.
        await backend.entered(one["id"]).wait()
        await backend.entered(two["id"]).wait()
    backend.release(one["id"])
    backend.release(two["id"])
    first, second = await finished(client, one["id"]), await finished(client, two["id"])

    assert first["status"]["state"] == second["status"]["state"] == COMPLETED
    for task, mine, theirs in ((first, "alpha", "beta"), (second, "beta", "alpha")):
        data, patch = changes(task)
        assert data["files"] == [
            {"path": "notes.txt", "status": "modified", "additions": 1, "deletions": 1}
        ]
        assert f"+from {mine}" in patch
        assert theirs not in patch
        assert "-original" in patch
        section = workspace_of(task)
        assert section["branch"] == f"a2a/{mine}"
        assert section["base"] == data["base"] == git(repo, "rev-parse", "HEAD").strip()
        assert Path(section["path"]).is_relative_to(tmp_path / "state" / "workspaces")
        assert (Path(section["path"]) / "notes.txt").read_text() == f"from {mine}\n"
        resume = task["metadata"]["a2aWrapper"].get("resumeCommand")
        assert resume is None or resume.startswith("cd ")
    assert (repo / "notes.txt").read_text() == "original\n", "the original checkout is untouched"
    assert git(repo, "status", "--porcelain") == ""
    assert {"a2a/alpha", "a2a/beta"} <= set(
        git(repo, "branch", "--format=%(refname:short)").split()
    )


async def test_an_edit_of_the_same_size_right_after_the_worktree_is_made_is_seen(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    # "replaced" is as long as "original", written within the second the worktree's index was:
    # only git's racy-clean check (the index's own mtime, kept in the copy) tells it changed.
    client = await make_client(settings(tmp_path, repo))
    task = await send(client, "racy", "write: notes.txt=replaced")

    data, patch = changes(task)
    assert [f["path"] for f in data["files"]] == ["notes.txt"]
    assert "+replaced" in patch


async def test_in_shared_mode_turns_of_two_contexts_never_overlap(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    backend = ScriptedBackend({"root": str(repo)})
    client = await make_client(settings(tmp_path, repo, mode="shared"), backend_=backend)
    first = await send(client, "one", "write-block: notes.txt=one", wait=False)
    with anyio.fail_after(10):
        await backend.entered(first["id"]).wait()
    second = await send(client, "two", "write: notes.txt=two", wait=False)
    # Room for the second turn to start if it could (it must wait for the first).
    await anyio.sleep(0.3)
    assert backend.most_at_once == 1
    backend.release(first["id"])
    done = await finished(client, second["id"])

    assert done["status"]["state"] == COMPLETED
    assert backend.most_at_once == 1
    assert (repo / "notes.txt").read_text() == "two\n", "shared mode works in workingDirectory"
    assert "artifacts" not in done or all(a.get("name") != "changes" for a in done["artifacts"])


async def test_a_callers_patch_is_in_the_workspace_before_the_turn(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo))
    patch = (
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-original\n+patched by the caller\n"
        "--- /dev/null\n+++ b/src/new.py\n@@ -0,0 +1 @@\n+NEW = 1\n"
    )
    task = await send(client, "patched", "read: notes.txt", patch_part(patch))

    assert task["status"]["state"] == COMPLETED, task
    assert status_text(task) == "patched by the caller\n"
    assert "changes" not in [a.get("name") for a in task.get("artifacts", [])]
    where = Path(workspace_of(task)["path"])
    assert (where / "src" / "new.py").read_text() == "NEW = 1\n"
    assert (repo / "notes.txt").read_text() == "original\n"

    # The caller's patch is part of the cumulative diff (asked for), not of a turn's own.
    later = await send(
        client,
        "patched",
        "write: src/app.py=print('two')",
        metadata={"a2aWrapper": {"changes": "cumulative"}},
    )
    data, text = changes(later)
    assert data["scope"] == "cumulative"
    assert [f["path"] for f in data["files"]] == ["notes.txt", "src/app.py", "src/new.py"]
    assert "+patched by the caller" in text
    assert "+NEW = 1" in text


async def test_a_patch_that_does_not_apply_fails_the_task_and_changes_nothing(
    tmp_path: Path, repo: Path, make_client: MakeClient, backend: ScriptedBackend
) -> None:
    client = await make_client(settings(tmp_path, repo))
    first = await send(client, "conflict", "write: notes.txt=changed by the agent")
    where = Path(workspace_of(first)["path"])
    patch = (
        "--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-print('one')\n+print('patched')\n"
        "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-original\n+patched\n"
    )
    task = await send(client, "conflict", "read: notes.txt", patch_part(patch, "text/x-patch"))

    assert task["status"]["state"] == FAILED
    assert "notes.txt" in status_text(task)
    assert "does not apply" in status_text(task)
    assert "src/app.py" not in status_text(task), "only the file that conflicts is named"
    assert (where / "notes.txt").read_text() == "changed by the agent\n"
    assert (where / "src" / "app.py").read_text() == "print('one')\n", "all or nothing"
    assert len(backend.turns) == 1, "the agent never saw the turn"


async def test_patches_in_several_parts_apply_together_or_not_at_all(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo))
    good = "--- /dev/null\n+++ b/added.txt\n@@ -0,0 +1 @@\n+added\n"
    bad = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-not there\n+x\n"
    failed = await send(client, "parts", "read: notes.txt", patch_part(good), patch_part(bad))
    done = await send(client, "parts", "read: added.txt", patch_part(good))

    assert failed["status"]["state"] == FAILED
    assert done["status"]["state"] == COMPLETED, "the first attempt left nothing behind"
    assert status_text(done) == "added\n"


@pytest.mark.parametrize(
    ("patch", "says"),
    [
        ("this is not a diff\n", "malformed"),
        ("--- a/../outside.txt\n+++ b/../outside.txt\n@@ -0,0 +1 @@\n+x\n", "outside"),
        ("--- /dev/null\n+++ /etc/evil\n@@ -0,0 +1 @@\n+x\n", "absolute"),
        (
            "diff --git a/link b/link\nnew file mode 120000\n--- /dev/null\n+++ b/link\n"
            "@@ -0,0 +1 @@\n+/etc\n\\ No newline at end of file\n",
            "symbolic link",
        ),
        ("--- a/.git/config\n+++ b/.git/config\n@@ -1 +1 @@\n-a\n+b\n", ".git"),
    ],
    ids=["malformed", "traversal", "absolute", "symlink", "git-dir"],
)
async def test_a_malformed_or_escaping_patch_is_invalid_params(
    tmp_path: Path, repo: Path, make_client: MakeClient, patch: str, says: str
) -> None:
    client = await make_client(settings(tmp_path, repo))
    message = user_message("go", contextId="evil")
    message["parts"].append(patch_part(patch, "application/x-git-patch"))
    body = await call(client, "SendMessage", {"message": message})

    assert body["error"]["code"] == -32602, body
    assert says in body["error"]["message"]
    listed = await call(client, "ListTasks", {"contextId": "evil"})
    assert listed["result"]["tasks"] == [], "nothing was stored"


async def test_a_patch_larger_than_max_patch_bytes_is_invalid_params(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo, maxPatchBytes=64))
    patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-original\n+" + "x" * 100 + "\n"
    message = user_message("go", contextId="big")
    message["parts"].append(patch_part(patch))
    body = await call(client, "SendMessage", {"message": message})

    assert body["error"]["code"] == -32602
    assert "workspace.maxPatchBytes" in body["error"]["message"]


async def test_a_patch_through_a_symbolic_link_in_the_workspace_is_refused(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "link").symlink_to(outside)
    git(repo, "add", "link")
    git(repo, "commit", "-q", "-m", "a link")
    client = await make_client(settings(tmp_path, repo))
    patch = "--- /dev/null\n+++ b/link/planted.txt\n@@ -0,0 +1 @@\n+planted\n"
    task = await send(client, "linked", "read: notes.txt", patch_part(patch))

    assert task["status"]["state"] == FAILED
    assert "symbolic link" in status_text(task)
    assert list(outside.iterdir()) == []


async def test_commit_turns_commits_each_changing_turn_on_the_branch(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo, commitTurns=True))
    first = await send(client, "commits", "write: notes.txt=one")
    second = await send(client, "commits", "write: notes.txt=two")
    quiet = await send(client, "commits", "read: notes.txt")

    one, _ = changes(first)
    two, patch = changes(second)
    assert one["commit"] == one["head"] != one["base"]
    assert two["commit"] == two["head"] != one["commit"]
    assert "-one" in patch and "+two" in patch, "a turn's diff, not the cumulative one"
    log = git(repo, "log", "--format=%H %an", "a2a/commits").splitlines()
    assert log[:2] == [f"{two['commit']} a2a-wrapper", f"{one['commit']} a2a-wrapper"]
    assert "changes" not in [a.get("name") for a in quiet.get("artifacts", [])]
    assert workspace_of(quiet)["head"] == two["commit"]


async def test_copy_mode_gives_a_plain_directory_a_private_copy(
    tmp_path: Path, make_client: MakeClient
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "todo.txt").write_text("buy milk\n")
    client = await make_client(settings(tmp_path, plain, mode="copy"))
    task = await send(client, "copy", "write: todo.txt=buy bread")

    data, patch = changes(task)
    assert data["files"] == [
        {"path": "todo.txt", "status": "modified", "additions": 1, "deletions": 1}
    ]
    assert "-buy milk" in patch and "+buy bread" in patch
    where = Path(workspace_of(task)["path"])
    assert (where / "todo.txt").read_text() == "buy bread\n"
    assert not (where / ".git").exists(), "the copy's git directory lies beside it"
    assert (plain / "todo.txt").read_text() == "buy milk\n"


async def test_worktree_mode_on_a_plain_directory_fails_saying_why(
    tmp_path: Path, make_client: MakeClient
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    client = await make_client(settings(tmp_path, plain))
    task = await send(client, "nogit", "echo: hi")

    assert task["status"]["state"] == FAILED
    assert "workspace.mode copy" in status_text(task)


async def test_max_workspaces_refuses_a_new_context_beyond_it(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    client = await make_client(settings(tmp_path, repo, maxWorkspaces=1))
    first = await send(client, "first", "echo: one")
    again = await send(client, "first", "echo: two")
    other = await send(client, "second", "echo: three")

    assert first["status"]["state"] == again["status"]["state"] == COMPLETED
    assert other["status"]["state"] == FAILED
    assert "workspace.maxWorkspaces" in status_text(other)


async def test_a_restart_keeps_the_contexts_workspace(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    config = settings(tmp_path, repo)
    before = await make_client(config, store=None, backend_=ScriptedBackend())
    first = await send(before, "kept", "write: notes.txt=before the restart")
    await before.close()
    after = await make_client(config, backend_=ScriptedBackend())
    second = await send(after, "kept", "read: notes.txt")

    assert status_text(second) == "before the restart\n"
    assert workspace_of(second)["path"] == workspace_of(first)["path"]


async def test_expiry_removes_the_workspace_and_its_branch_keeping_a_patch(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    clock = FakeClock()
    config = settings(tmp_path, repo)
    config = config.model_copy(
        update={"session": config.session.model_copy(update={"ttl": 1000, "cleanup_interval": 0})}
    )
    client = await make_client(config, clock=clock)
    task = await send(client, "expiring", "write: notes.txt=unsaved work")
    where = Path(workspace_of(task)["path"])
    clock.advance(seconds=2)

    assert await client.app[SERVICE].sessions.sweep() == 1
    assert not await anyio.Path(where).exists()
    assert "a2a/expiring" not in git(repo, "branch", "--format=%(refname:short)")
    saved = list((tmp_path / "state" / "workspace-patches").iterdir())
    assert len(saved) == 1
    assert "+unsaved work" in saved[0].read_text()
    git(repo, "apply", "--check", str(saved[0]))  # the saved patch applies to the base


def _config_file(tmp_path: Path, workspace: dict[str, Any], work: Path) -> str:
    path = tmp_path / "config.json"
    config = {
        "backend": "claude",
        "claude": {"workingDirectory": str(work)},
        "storage": {"path": str(tmp_path / "state" / "tasks.sqlite3")},
        "workspace": workspace,
    }
    path.write_text(json.dumps(config))
    return str(path)


def test_check_warns_when_shared_mode_and_parallel_turns_meet_a_repository(
    tmp_path: Path, repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    main(["check", _config_file(tmp_path, {}, repo)])
    shared = capsys.readouterr().out
    main(["check", _config_file(tmp_path, {"mode": "worktree"}, repo)])
    worktree = capsys.readouterr().out
    main(["check", _config_file(tmp_path, {"mode": "worktree"}, tmp_path)])
    plain = capsys.readouterr().out

    assert "  ok   workspace: shared (every context in workingDirectory)" in shared
    assert "  warn workspace: workspace.mode is shared, server.maxConcurrentTurns is 8" in shared
    assert "warn workspace" not in worktree
    assert f"  ok   workspace: worktree under {tmp_path / 'state' / 'workspaces'}" in worktree
    assert "  FAIL workspace: worktree under" in plain
    assert "not in a git repository" in plain


async def test_the_workspaces_command_lists_each_workspace_with_its_size(
    tmp_path: Path, repo: Path, make_client: MakeClient
) -> None:
    config = _config_file(tmp_path, {"mode": "worktree"}, repo)
    client = await make_client(settings(tmp_path, repo))
    task = await send(client, "listed", "write: notes.txt=listed")
    await client.close()
    done = await anyio.to_thread.run_sync(
        lambda: subprocess.run(  # noqa: S603 - argv, no shell
            [sys.executable, "-m", "core.cli", "workspaces", config],
            capture_output=True,
            text=True,
            check=False,
        )
    )

    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()
    assert header.split("\t") == [
        "CONTEXT",
        "PRINCIPAL",
        "MODE",
        "BRANCH",
        "SIZE",
        "CREATED",
        "STATE",
        "PATH",
    ]
    context, _principal, mode, branch, size, _created, state, path = row.split("\t")
    assert (context, mode, branch, state) == ("listed", "worktree", "a2a/listed", "active")
    assert path == workspace_of(task)["path"]
    assert size.endswith(("B", "KiB", "MiB"))
