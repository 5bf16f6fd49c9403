"""Every backend works in its context's workspace (issue 20): in `worktree` mode two contexts
edit one file at once, each on its own branch, and each `changes` artifact holds only its own
edit; a caller's patch is in the workspace when the agent looks; a conflicting or escaping
patch changes nothing; a restart keeps the workspace, and the session sweep removes it after
saving its changes. In `shared` mode the turns of two contexts never overlap.

Edits are the agents' shell tools (`Shell` steps): every agent runs them in its cwd, which is
what the daemon sets per context.
"""

from __future__ import annotations

import base64
import shlex
import time
from pathlib import Path
from typing import Any

import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Shell
from tests.contract.agent import Agent, context, state, status_text, wrapper
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget
from tests.support.git_repo import git, make_repository

pytestmark = pytest.mark.needs("shell")

COMPLETED = "TASK_STATE_COMPLETED"
FAILED = "TASK_STATE_FAILED"


@pytest.fixture(scope="module")
def agent(target: BackendTarget, serve: Serve) -> Agent:
    made = serve(block=target.runs_shell, workspace={"mode": "worktree"})
    make_repository(made.places.work)
    return made


def send(agent: Agent, text: str, ctx: str, *parts: dict[str, Any], wait: bool = True) -> Any:
    message = agent.message(text, contextId=ctx)
    message["parts"] += list(parts)
    params: dict[str, Any] = {"message": message}
    if not wait:
        params["configuration"] = {"returnImmediately": True}
    return agent.call("SendMessage", params)


def task_of(body: dict[str, Any]) -> dict[str, Any]:
    assert "result" in body, body
    task: dict[str, Any] = body["result"]["task"]
    return task


def changes(task: dict[str, Any]) -> tuple[dict[str, Any], str]:
    found = [a for a in task.get("artifacts") or [] if a.get("name") == "changes"]
    assert len(found) == 1, task
    data, patch = found[0]["parts"]
    assert (patch["filename"], patch["mediaType"]) == ("changes.patch", "text/x-diff")
    return data["data"], base64.b64decode(patch["raw"]).decode()


def patch_part(text: str) -> dict[str, Any]:
    return {"raw": base64.b64encode(text.encode()).decode(), "mediaType": "text/x-diff"}


def test_two_contexts_edit_one_file_at_once_each_on_its_own_branch(
    agent: Agent, model: MockModel
) -> None:
    model.script(
        [Shell("printf 'edit ONE\\n' > notes.txt")], [Shell("printf 'edit TWO\\n' > notes.txt")]
    )
    first, second = context(), context()
    started = [task_of(send(agent, "Edit notes.txt.", c, wait=False)) for c in (first, second)]
    done = [agent.until_done(t["id"], timeout=90) for t in started]

    assert [state(t) for t in done] == [COMPLETED, COMPLETED], done
    edits = []
    for task in done:
        data, patch = changes(task)
        assert [f["path"] for f in data["files"]] == ["notes.txt"], data
        assert "-original" in patch
        mine = [word for word in ("ONE", "TWO") if f"+edit {word}" in patch]
        assert len(mine) == 1, patch
        edits += mine
        section = wrapper(task)["workspace"]
        assert section["branch"] == f"a2a/{task['contextId']}"
        resume = wrapper(task).get("resumeCommand")
        assert resume is None or resume.startswith(f"cd {shlex.quote(section['path'])} && ")
        assert (Path(section["path"]) / "notes.txt").read_text() == f"edit {mine[0]}\n"
    assert sorted(edits) == ["ONE", "TWO"], "each artifact holds only its own edit"
    work = agent.places.work
    assert (work / "notes.txt").read_text() == "original\n", "the original checkout is untouched"
    branches = git(work, "branch", "--format=%(refname:short)").split()
    assert {f"a2a/{first}", f"a2a/{second}"} <= set(branches)


def test_a_callers_patch_is_in_the_workspace_when_the_agent_reads(
    agent: Agent, model: MockModel
) -> None:
    model.script([Shell("cat notes.txt")])
    patch = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-original\n+PATCHED-BY-CALLER\n"
    task = task_of(send(agent, "Show notes.txt.", context(), patch_part(patch)))

    assert state(task) == COMPLETED, task
    read = model.wait_for_request(lambda r: any("PATCHED-BY-CALLER" in o for o in r.tool_outputs()))
    assert read.ends_with_tool_output
    assert (agent.places.work / "notes.txt").read_text() == "original\n"


def test_a_conflicting_patch_fails_the_task_and_an_escaping_one_is_refused(
    agent: Agent, model: MockModel
) -> None:
    ctx = context()
    conflicting = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-not what is there\n+x\n"
    failed = task_of(send(agent, "Apply this.", ctx, patch_part(conflicting)))
    escaping = "--- a/../escape.txt\n+++ b/../escape.txt\n@@ -0,0 +1 @@\n+x\n"
    refused = send(agent, "Apply this.", ctx, patch_part(escaping))

    assert state(failed) == FAILED
    assert "notes.txt" in status_text(failed)
    assert "nothing was changed" in status_text(failed)
    assert refused["error"]["code"] == -32602, refused
    assert not any("Apply this." in r.last_user_text for r in model.requests), "no turn ran"


@pytest.mark.needs("resume")
def test_a_restart_keeps_the_contexts_workspace(agent: Agent, model: MockModel) -> None:
    ctx = context()
    model.script([Shell("printf 'KEPT\\n' > kept.txt")], [Shell("cat kept.txt")])
    first = task_of(send(agent, "Write kept.txt.", ctx))
    agent.restart()
    second = task_of(send(agent, "Show kept.txt.", ctx))

    assert state(first) == state(second) == COMPLETED, (first, second)
    kept = ("path", "branch", "base")
    assert [wrapper(second)["workspace"][k] for k in kept] == [
        wrapper(first)["workspace"][k] for k in kept
    ]
    model.wait_for_request(lambda r: any("KEPT" in o for o in r.tool_outputs()))


def test_an_expired_session_takes_its_workspace_and_leaves_its_changes_as_a_patch(
    target: BackendTarget, serve: Serve, model: MockModel
) -> None:
    # A daemon of its own: its sessions expire 2 s after they start.
    agent = serve(block=target.runs_shell, workspace={"mode": "worktree"}, session={"ttl": 2000})
    make_repository(agent.places.work)
    ctx = context()
    model.script([Shell("printf 'UNSAVED\\n' > notes.txt")])
    first = task_of(send(agent, "Edit notes.txt.", ctx))
    where = Path(wrapper(first)["workspace"]["path"])
    time.sleep(2.2)  # the ttl passes (the session began within the turn: real time)
    second = task_of(send(agent, "Start again.", ctx))

    assert state(first) == state(second) == COMPLETED, (first, second)
    assert wrapper(second)["expiredSession"] is True
    saved = list((agent.places.root / "workspace-patches").glob("*.patch"))
    assert len(saved) == 1, saved
    assert "+UNSAVED" in saved[0].read_text()
    assert (where / "notes.txt").read_text() == "original\n", "a fresh worktree from the base"
    assert (agent.places.work / "notes.txt").read_text() == "original\n"


def test_in_shared_mode_the_turns_of_two_contexts_never_overlap(
    target: BackendTarget, serve: Serve, model: MockModel
) -> None:
    agent = serve(block=target.runs_shell)
    make_repository(agent.places.work)
    log = agent.places.work / "intervals.log"  # inside: Codex's sandbox writes only there
    # No `$(...)`: Gemini CLI refuses command substitution.
    stamp = f"date +%s.%N >> {log}"
    step = f"echo start >> {log} && {stamp} && sleep 1 && echo end >> {log} && {stamp}"
    model.script([Shell(step)], [Shell(step)])
    started = [task_of(send(agent, "Take a while.", context(), wait=False)) for _ in range(2)]
    done = [agent.until_done(t["id"], timeout=90) for t in started]

    assert [state(t) for t in done] == [COMPLETED, COMPLETED], done
    lines = log.read_text().split()
    marks = list(zip(lines[::2], map(float, lines[1::2]), strict=True))
    assert [kind for kind, _ in marks] == ["start", "end", "start", "end"], marks
    assert marks[1][1] <= marks[2][1], "the second turn started after the first one ended"
