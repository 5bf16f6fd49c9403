"""A real agent cannot reach past its worktree through git (issue 31, items 1-3): the agent's
own shell tool rewrites its worktree's `.git` (a `.git/` folder whose config names commands
and another context's worktree, a post-commit hook; or a `.git` file pointing at the
repository), and the daemon, committing each turn (`commitTurns`), runs none of those
commands, reads and removes no other workspace, and never touches the original checkout.

The tampering is a small Python script the agent pipes into python3 in its cwd (naming no
path outside it, which Copilot would ask about; no `$(...)`, which Gemini CLI refuses; not a
file edit of `.git`, which Claude refuses); `tests/test_workspace_escape.py` has the same
cases with a scripted agent.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Shell
from tests.contract.agent import Agent, context, state, wrapper
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget
from tests.support.git_repo import git, make_repository

pytestmark = pytest.mark.needs("shell")

COMPLETED = "TASK_STATE_COMPLETED"


@pytest.fixture(scope="module")
def agent(target: BackendTarget, serve: Serve) -> Agent:
    # The agent is untrusted: it may run without a sandbox of its own (target.unconfined).
    block = {**target.runs_shell, **target.unconfined}
    made = serve(block=block, workspace={"mode": "worktree", "commitTurns": True})
    make_repository(made.places.work)
    return made


def run(agent: Agent, text: str, ctx: str) -> dict[str, Any]:
    body = agent.call("SendMessage", {"message": agent.message(text, contextId=ctx)})
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def changes(task: dict[str, Any]) -> tuple[dict[str, Any], str]:
    found = [a for a in task.get("artifacts") or [] if a.get("name") == "changes"]
    assert len(found) == 1, task
    data, patch = found[0]["parts"]
    return data["data"], base64.b64decode(patch["raw"]).decode()


def python(code: str) -> str:
    """A shell command that runs `code` with python3 in the agent's cwd."""
    return f"echo {base64.b64encode(code.encode()).decode()} | base64 -d | python3"


def tamper_script(repository: Path, marker: Path, other: Path) -> str:
    """What the agent runs in its cwd: a `.git/` folder of its own, borrowing the
    repository's objects, whose config runs `touch marker` three ways and whose work tree is
    another context's worktree."""
    head = git(repository, "rev-parse", "HEAD").strip()
    touch = f"touch {marker}; false"
    config = (
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        f'\tfsmonitor = "{touch}"\n\thooksPath = .git/hooks\n\tworktree = {other}\n'
        f'[filter "own"]\n\tclean = "{touch}"\n\tsmudge = cat\n'
    )
    objects = str(repository / ".git" / "objects")
    return (
        "import os, pathlib\n"
        "git = pathlib.Path('.git')\n"
        "if git.is_file():\n    git.unlink()\n"
        "for sub in ('objects/info', 'refs/heads', 'hooks'):\n"
        "    (git / sub).mkdir(parents=True, exist_ok=True)\n"
        f"(git / 'objects/info/alternates').write_text({objects!r} + '\\n')\n"
        f"(git / 'refs/heads/main').write_text({head!r} + '\\n')\n"
        "(git / 'HEAD').write_text('ref: refs/heads/main\\n')\n"
        f"(git / 'config').write_text({config!r})\n"
        f"(git / 'hooks/post-commit').write_text('#!/bin/sh\\n' + {touch!r} + '\\n')\n"
        "os.chmod(git / 'hooks/post-commit', 0o755)\n"
        "pathlib.Path('.gitattributes').write_text('* filter=own\\n')\n"
    )


def test_an_agent_whose_shell_makes_a_git_folder_of_its_own_runs_nothing_on_the_host(
    agent: Agent, model: MockModel
) -> None:
    repository = agent.places.work
    main = git(repository, "rev-parse", "main").strip()
    marker = agent.places.root / "owned-by-agent"
    other, mine = context(), context()
    model.script([Shell("printf 'OTHER WORK\\n' > other.txt")])
    victim = run(agent, "Write other.txt.", other)
    theirs = Path(wrapper(victim)["workspace"]["path"])
    tamper = python(tamper_script(repository, marker, theirs))
    model.script([Shell(f"{tamper} && printf 'MINE\\n' > notes.txt")])
    task = run(agent, "Edit notes.txt.", mine)

    assert [state(t) for t in (victim, task)] == [COMPLETED] * 2, task
    assert not marker.exists(), "a command the agent wrote into its .git ran on the host"
    data, patch = changes(task)
    assert sorted(f["path"] for f in data["files"]) == [".gitattributes", "notes.txt"], data
    assert "+MINE" in patch and "OTHER" not in patch
    branch = wrapper(task)["workspace"]["branch"]
    assert git(repository, "rev-parse", branch).strip() == data["commit"]
    assert (theirs / "other.txt").read_text() == "OTHER WORK\n"
    assert git(repository, "show", f"{wrapper(victim)['workspace']['branch']}:other.txt")
    assert git(repository, "rev-parse", "main").strip() == main
    assert git(repository, "status", "--porcelain") == ""


def test_an_agent_that_points_its_git_file_at_the_repository_commits_only_on_its_branch(
    agent: Agent, model: MockModel
) -> None:
    repository = agent.places.work
    main = git(repository, "rev-parse", "main").strip()
    point = python(f"open('.git', 'w').write('gitdir: {repository}/.git\\n')")
    model.script([Shell(f"{point} && printf 'MINE\\n' > notes.txt")])
    task = run(agent, "Edit notes.txt.", context())

    assert state(task) == COMPLETED, task
    data, patch = changes(task)
    assert "+MINE" in patch
    branch = wrapper(task)["workspace"]["branch"]
    assert git(repository, "rev-parse", branch).strip() == data["commit"]
    assert git(repository, "show", f"{branch}:notes.txt") == "MINE\n"
    assert git(repository, "rev-parse", "main").strip() == main
    assert git(repository, "status", "--porcelain") == "", "the main index is untouched"
