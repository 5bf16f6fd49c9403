"""`a2a-wrapper changes`: a worktree turn's `changes.patch`, printed or applied to a scratch
clone all or nothing; the cumulative diff of a context."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.client.conftest import Cli, Serve
from tests.support.git_repo import git, make_repository


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repository(tmp_path / "repo", {"notes.txt": "original\n", "src/app.py": "x\n"})


@pytest.fixture
async def worktrees(serve: Serve, repo: Path, tmp_path: Path) -> str:
    return await serve(
        backend="claude",
        claude={"workingDirectory": str(repo)},
        storage={"kind": "sqlite", "path": str(tmp_path / "state" / "tasks.sqlite3")},
        workspace={"mode": "worktree"},
    )


def clone(repo: Path, where: Path) -> Path:
    git(repo.parent, "clone", "-q", str(repo), str(where))
    return where


async def sent(cli: Cli, url: str, text: str, *args: str) -> dict[str, object]:
    done = await cli("send", url, text, "--json", *args)
    assert done.code == 0, done
    task: dict[str, object] = json.loads(done.out)
    return task


async def test_changes_prints_the_turns_patch(cli: Cli, worktrees: str) -> None:
    task = await sent(cli, worktrees, "write: notes.txt=changed")

    shown = await cli("changes", worktrees, str(task["id"]))

    assert shown.code == 0, shown
    assert "-original" in shown.out and "+changed" in shown.out
    assert shown.out.startswith("diff --git a/notes.txt b/notes.txt")
    assert "modified notes.txt +1 -1" in shown.err


async def test_apply_writes_the_patch_into_a_clone(
    cli: Cli, worktrees: str, repo: Path, tmp_path: Path
) -> None:
    task = await sent(cli, worktrees, "write: notes.txt=changed")
    scratch = clone(repo, tmp_path / "scratch")

    applied = await cli("changes", worktrees, str(task["id"]), "--apply", str(scratch))

    assert applied.code == 0, applied
    assert f"to {scratch}" in applied.out
    assert (scratch / "notes.txt").read_text() == "changed\n"
    assert (repo / "notes.txt").read_text() == "original\n", "the agent's checkout is untouched"


async def test_a_conflicting_patch_changes_nothing(
    cli: Cli, worktrees: str, repo: Path, tmp_path: Path
) -> None:
    task = await sent(cli, worktrees, "write: notes.txt=changed")
    scratch = clone(repo, tmp_path / "scratch")
    (scratch / "notes.txt").write_text("edited here meanwhile\n")
    (scratch / "src" / "app.py").write_text("y\n")

    refused = await cli("changes", worktrees, str(task["id"]), "--apply", str(scratch))

    assert refused.code == 1
    assert "does not apply" in refused.err and "nothing changed" in refused.err
    assert "notes.txt" in refused.err
    assert (scratch / "notes.txt").read_text() == "edited here meanwhile\n"


async def test_cumulative_changes_cover_every_turn_of_the_context(
    cli: Cli, worktrees: str, repo: Path, tmp_path: Path
) -> None:
    await sent(cli, worktrees, "write: notes.txt=first", "--context", "ctx-sum")
    await sent(cli, worktrees, "write: src/new.py=made", "--context", "ctx-sum")
    last = await sent(cli, worktrees, "write: notes.txt=second", "--context", "ctx-sum")
    scratch = clone(repo, tmp_path / "scratch")

    turn = await cli("changes", worktrees, str(last["id"]), "--json")
    applied = await cli(
        "changes", worktrees, str(last["id"]), "--cumulative", "--apply", str(scratch)
    )

    assert json.loads(turn.out)["scope"] == "turn"
    assert "src/new.py" not in json.loads(turn.out)["patch"]
    assert applied.code == 0, applied
    assert (scratch / "notes.txt").read_text() == "second\n"
    assert (scratch / "src" / "new.py").read_text() == "made\n"


async def test_the_daemons_own_cumulative_diff_is_used_when_asked_for(
    cli: Cli, worktrees: str
) -> None:
    await sent(cli, worktrees, "write: notes.txt=first", "--context", "ctx-own")
    last = await sent(
        cli, worktrees, "write: src/new.py=made", "--context", "ctx-own", "--cumulative"
    )

    shown = await cli("changes", worktrees, str(last["id"]), "--cumulative", "--json")

    found = json.loads(shown.out)
    assert found["scope"] == "cumulative"
    assert {f["path"] for f in found["files"]} == {"notes.txt", "src/new.py"}


async def test_a_task_without_changes_says_so(cli: Cli, worktrees: str) -> None:
    task = await sent(cli, worktrees, "echo: nothing to change")

    shown = await cli("changes", worktrees, str(task["id"]))

    assert shown.code == 1
    assert "has no changes" in shown.err
