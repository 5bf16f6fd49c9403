"""Code between steps (issue 25): a step's `changes` artifact, `applyChanges`, the
`{{steps.<id>.changes}}` summary, the job's combined patch and `apply`.

Two real daemon apps with `workspace.mode: worktree`, each on a clone of its own of one
project (as on two machines), with scripted agents that really write files in their
workspace and really run pytest there (tests/crew/agents.py: `write:`, `read:`, `pytest`).
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from a2a.types import SendMessageRequest, TaskState

from core.daemon import create_app
from examples.crew.agent import CrewAgent, CrewConfig
from examples.crew.ledger.ledger import Ledger
from examples.crew.plan.changes import ApplyError, apply_patch, job_dir, job_patch
from examples.crew.plan.plan import PlanError
from tests.conftest import make_settings
from tests.crew.agents import CrewBackend
from tests.crew.conftest import MakeServer, RunCrew, StartAgent, plan_of
from tests.crew.test_serve import Seen, sdk, watch
from tests.interop.conftest import user_msg
from tests.support.git_repo import git, make_repository

REPO = Path(__file__).resolve().parents[2]
TESTS = (
    "from slugify import slugify\n\n\n"
    "def test_words():\n    assert slugify('Hello World') == 'hello-world'\n\n\n"
    "def test_punctuation():\n    assert slugify('Hello, World!') == 'hello-world'\n"
)
BUGGY = "def slugify(title):\\n    return '-'.join(title.lower().split())\\n"
FIXED = (
    "import re\\n\\n\\ndef slugify(title):\\n"
    "    return '-'.join(re.findall('[a-z0-9]+', title.lower()))\\n"
)
VERDICT = {
    "type": "object",
    "required": ["result", "failures"],
    "properties": {"result": {"enum": ["pass", "fail"]}, "failures": {"type": "array"}},
}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    files = {"test_slugify.py": TESTS, ".gitignore": "__pycache__/\n.pytest_cache/\n"}
    return make_repository(tmp_path / "project", files)


def clone(project: Path, where: Path) -> Path:
    git(project.parent, "clone", "-q", str(project), str(where))
    return where


@pytest.fixture
def start_agent(aiohttp_server: MakeServer) -> StartAgent:
    """A daemon app whose contexts each get a worktree of `work` (settings name a built-in
    backend only for its workingDirectory; the agent is the scripted one)."""

    async def start(backend: CrewBackend, work: Path, state: Path) -> str:
        settings = make_settings(
            agentCard={"name": "crew agent"},
            backend="claude",
            claude={"workingDirectory": str(work)},
            storage={"kind": "sqlite", "path": str(state / "tasks.sqlite3")},
            workspace={"mode": "worktree"},
        )
        server = await aiohttp_server(create_app(settings, backend=backend))
        return str(server.make_url("")).rstrip("/")

    return start


async def two_agents(
    start: StartAgent, project: Path, tmp_path: Path, **backends: CrewBackend
) -> dict[str, str]:
    """Two agents (name=backend), each with worktrees of a clone of its own of `project`
    (`a/`, then `b/`, as on two machines): their base URLs by name."""
    urls = {}
    for (name, backend), where in zip(backends.items(), ("a", "b"), strict=True):
        work = clone(project, tmp_path / where)
        urls[name] = await start(backend, work, tmp_path / f"{where}-state")
    return urls


def fix_until_green(implementer: str, tester: str) -> list[dict[str, Any]]:
    return [
        {"id": "implement", "agent": "implementer", "prompt": f"write: slugify.py={BUGGY}"},
        {
            "id": "run-tests",
            "agent": "tester",
            "dependsOn": ["implement"],
            "applyChanges": ["implement"],
            "schema": VERDICT,
            "prompt": "pytest\nround {{round}}; what changed:\n{{steps.implement.changes}}",
        },
        {
            "id": "fix",
            "agent": "implementer",
            "dependsOn": ["run-tests"],
            "revises": "implement",
            "repeatUntil": {"step": "run-tests", "field": "result", "equals": "pass"},
            "prompt": f"write: slugify.py={FIXED}\n{{{{steps.run-tests.data.failures}}}}",
        },
    ]


async def test_the_tester_runs_the_implementers_real_files_in_its_own_worktree(
    tmp_path: Path, project: Path, start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    coder, tester = CrewBackend(), CrewBackend()
    agents = await two_agents(start_agent, project, tmp_path, implementer=coder, tester=tester)
    plan = plan_of(agents, fix_until_green("implementer", "tester"))

    result = await crew(plan, "make the tests pass")

    assert result.outcome.state == "done", result.report
    verdicts = [r.output_data for r in await ledger.runs("job-1", "run-tests") if r.state == "done"]
    assert [v["result"] for v in verdicts] == ["fail", "pass"], verdicts
    assert "test_punctuation" in verdicts[0]["failures"][0]  # pytest really ran the buggy code
    first, second = (t.text for t in tester.turns)
    assert "slugify.py: added (+2 -0)" in first  # {{steps.implement.changes}}
    assert "The caller's patch to slugify.py was applied" in first
    # Round 2 carries only the fix: the first patch is in that worktree already.
    assert "slugify.py: added (+" in second and "in 2 turns" in second
    assert "The caller's patch to slugify.py was applied" in second
    sent = await ledger.sent("job-1")
    assert (sent[("run-tests", 1)], sent[("run-tests", 2)]) == ({"implement:1"}, {"fix:1"})
    for clone_dir in (tmp_path / "a", tmp_path / "b"):  # the checkouts are never touched
        assert not (clone_dir / "slugify.py").exists()
    implemented = (await ledger.runs("job-1", "implement"))[0]
    assert implemented.output_text == "wrote slugify.py"
    assert implemented.output_data is None  # the changes artifact is not the step's answer
    saved = job_dir(ledger, "job-1") / "changes.patch"
    assert saved.read_text() == await job_patch(ledger, "job-1")
    assert "## Changes" in result.report and str(saved) in result.report
    assert "+    return '-'.join(re.findall" in result.report


async def run(*argv: str, cwd: Path = REPO) -> tuple[int, str, str]:
    """A real subprocess: exit status, stdout, stderr."""
    with anyio.fail_after(120):
        done = await anyio.run_process([sys.executable, *argv], cwd=cwd, check=False)
    return done.returncode, done.stdout.decode(), done.stderr.decode()


async def apply_cli(ledger: Ledger, to: Path, job: str = "job-1") -> tuple[int, str, str]:
    """`python -m examples.crew apply`, as a person runs it."""
    return await run(
        "-m", "examples.crew", "apply", "--job", job, "--ledger", str(ledger.path), "--to", str(to)
    )


async def test_apply_puts_the_final_change_into_a_checkout_and_refuses_a_conflict(
    tmp_path: Path, project: Path, start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    agents = await two_agents(
        start_agent, project, tmp_path, implementer=CrewBackend(), tester=CrewBackend()
    )
    result = await crew(plan_of(agents, fix_until_green("implementer", "tester")), "go")
    assert result.outcome.state == "done", result.report

    scratch = clone(project, tmp_path / "scratch")
    code, out, err = await apply_cli(ledger, scratch)
    assert code == 0, err
    assert "slugify.py" in out
    code, out, _ = await run("-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=scratch)
    assert code == 0, out

    mine = clone(project, tmp_path / "mine")
    (mine / "slugify.py").write_text("def slugify(title):\n    return title\n")
    (mine / "test_slugify.py").write_text("# my own edit\n")
    before = git(mine, "status", "--porcelain")
    code, out, err = await apply_cli(ledger, mine)
    assert code == 1, out
    assert "does not apply; nothing was changed" in err
    assert "slugify.py" in err
    assert git(mine, "status", "--porcelain") == before
    assert (mine / "slugify.py").read_text() == "def slugify(title):\n    return title\n"


def test_apply_refuses_a_subdirectory_and_a_broken_patch_changes_nothing(tmp_path: Path) -> None:
    repo = make_repository(tmp_path / "repo", {"a.txt": "one\n", "sub/b.txt": "two\n"})
    patch = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+ONE\n"
    with pytest.raises(ApplyError, match="relative to a checkout's root"):
        apply_patch(patch, repo / "sub")
    half = patch + "--- a/sub/b.txt\n+++ b/sub/b.txt\n@@ -1 +1 @@\n-not there\n+x\n"
    with pytest.raises(ApplyError, match="nothing was changed"):
        apply_patch(half, repo)
    assert (repo / "a.txt").read_text() == "one\n"  # all or nothing: the good half is not in
    assert apply_patch(patch, repo) == ["a.txt"]
    assert (repo / "a.txt").read_text() == "ONE\n"


async def test_apply_of_a_job_without_changes_says_so(tmp_path: Path, ledger: Ledger) -> None:
    await ledger.create_job("job-1", "crew", "digest", "input", "ctx")
    code, _, err = await apply_cli(ledger, tmp_path)
    assert code == 0
    assert "changed no files; nothing to apply" in err
    code, _, err = await apply_cli(ledger, tmp_path, job="nope")
    assert code == 2
    assert "no job 'nope'" in err


async def test_a_reviewer_reads_the_writers_file_in_its_own_worktree(
    tmp_path: Path, project: Path, start_agent: StartAgent, crew: RunCrew
) -> None:
    agents = await two_agents(
        start_agent, project, tmp_path, writer=CrewBackend(), reviewer=CrewBackend()
    )
    steps: list[dict[str, Any]] = [
        {"id": "write", "agent": "writer", "prompt": f"write: slugify.py={BUGGY}"},
        {
            "id": "review",
            "agent": "reviewer",
            "dependsOn": ["write"],
            "applyChanges": ["write"],
            "prompt": "read: slugify.py",
        },
    ]
    result = await crew(plan_of(agents, steps), "go")

    assert result.outcome.state == "done", result.report
    assert "return '-'.join(title.lower().split())" in result.report  # the file, as read


def test_apply_changes_must_name_a_dependency_and_changes_takes_no_field() -> None:
    agents = {"a": "http://127.0.0.1:1"}
    with pytest.raises(PlanError, match="applyChanges names 'x', which is not among"):
        plan_of(
            agents,
            [
                {"id": "x", "agent": "a", "prompt": "p"},
                {"id": "y", "agent": "a", "prompt": "p", "applyChanges": ["x"]},
            ],
        )
    with pytest.raises(PlanError, match=r"\.changes takes no field"):
        plan_of(
            agents,
            [
                {"id": "x", "agent": "a", "prompt": "p"},
                {"id": "y", "agent": "a", "dependsOn": ["x"], "prompt": "{{steps.x.changes.a}}"},
            ],
        )
    plan = plan_of(
        agents,
        [
            {"id": "x", "agent": "a", "prompt": "p"},
            {"id": "y", "agent": "a", "dependsOn": ["x"], "applyChanges": ["x"], "prompt": "p"},
        ],
    )
    assert plan.step("y").apply_changes == ["x"]
    assert json.loads(json.dumps(plan.step("y").model_dump(by_alias=True)))["applyChanges"] == ["x"]


async def test_a_retry_does_not_send_a_patch_its_failed_attempt_already_applied(
    tmp_path: Path, project: Path, start_agent: StartAgent, crew: RunCrew, ledger: Ledger
) -> None:
    """The first attempt's turn fails after the daemon applied the patch: the retries go to
    the same workspace, so they must not carry the patch again (it would not apply). (`flaky`
    fails the first time it sees a prompt text: the first attempt's text has the daemon's
    note on the patch, so the second fails too, and the third passes.)"""
    reviewer = CrewBackend()
    agents = await two_agents(
        start_agent, project, tmp_path, writer=CrewBackend(), reviewer=reviewer
    )
    steps: list[dict[str, Any]] = [
        {"id": "write", "agent": "writer", "prompt": f"write: slugify.py={BUGGY}"},
        {
            "id": "review",
            "agent": "reviewer",
            "dependsOn": ["write"],
            "applyChanges": ["write"],
            "retries": 2,
            "retryDelay": 0,
            "prompt": "flaky: looks fine",
        },
    ]
    result = await crew(plan_of(agents, steps), "go")

    assert result.outcome.state == "done", result.report
    assert [r.state for r in await ledger.runs("job-1", "review")] == ["failed", "failed", "done"]
    assert await ledger.sent("job-1") == {("review", 1): {"write:1"}}
    first, *retries = (t.text for t in reviewer.turns)
    assert "The caller's patch to slugify.py was applied" in first
    assert retries == ["flaky: looks fine", "flaky: looks fine"]


async def test_a_served_crew_ends_with_the_report_and_the_combined_patch(
    tmp_path: Path, project: Path, start_agent: StartAgent, aiohttp_server: MakeServer
) -> None:
    coder, tester = CrewBackend(), CrewBackend()
    agents = await two_agents(start_agent, project, tmp_path, implementer=coder, tester=tester)
    plan = tmp_path / "plan.json"
    doc = {"agents": {n: {"card": u} for n, u in agents.items()}}
    plan.write_text(json.dumps({**doc, "steps": fix_until_green("implementer", "tester")}))
    ledger = tmp_path / "crew.sqlite3"
    served = create_app(
        make_settings(agentCard={"name": "crew"}),
        backend=CrewAgent(CrewConfig(plan=plan, ledger=ledger)),
    )
    url = str((await aiohttp_server(served)).make_url("")).rstrip("/")
    client, http = await sdk(url)
    try:
        with anyio.fail_after(60):
            request = SendMessageRequest(message=user_msg("make the tests pass"))
            seen = await watch(client.send_message(request), Seen())
    finally:
        await http.aclose()

    assert seen.state == TaskState.TASK_STATE_COMPLETED, seen
    assert "report" in seen.artifacts
    [part] = seen.artifacts["patch"]
    assert part["filename"] == "changes.patch"
    assert part["mediaType"] == "text/x-diff"
    async with Ledger.opened(ledger) as book:
        job_id = await book.job_of_task(seen.task_id)
        assert job_id is not None
        expected = await job_patch(book, job_id)
    assert base64.b64decode(str(part["raw"])).decode() == expected
    assert "+++ b/slugify.py" in expected
