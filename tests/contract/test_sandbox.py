"""A sandbox per principal (issue 38), with each real agent on its mock: two principals, a
worktree per context, and alice's agent told by the mock to run shell commands that read and
write bob's workspace, read the daemon's state file and a file planted in the daemon user's
home, and read and write its own workspace. Under `sandbox.mode: bubblewrap` only its own
workspace answers; under `none` every probe succeeds (so the probes are real). What happened
is read on disk, never from the agent's words.

The daemon's HOME, state file and workspace root live under /var/tmp, not /tmp: the sandbox's
private /tmp alone would hide a /tmp path, and the probes must show the walls the sandbox
builds for them (a tmpfs over each, only this principal's folder bound back).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import Shell
from tests.contract.agent import Agent, context, state, wrapper
from tests.contract.conftest import Serve
from tests.contract.targets import BackendTarget
from tests.support.git_repo import make_repository
from tests.support.orphans import logged

pytestmark = pytest.mark.needs("shell")

COMPLETED = "TASK_STATE_COMPLETED"
TOKENS = {"alice": "alice-token-" + "a" * 32, "bob": "bob-token-" + "b" * 32}
BOB_TEXT = "BOB-PRIVATE-TEXT"
PLANTED = "DAEMON-HOME-SECRET"
# Keys with which each agent's own policy lets its shell read and write outside its working
# directory, so that under `sandbox.mode: none` nothing but the sandbox stands in the way.
UNCONFINED: dict[str, dict[str, Any]] = {
    "codex": {"sandbox": "danger-full-access", "dangerouslyAllowFullAccess": True},
    "copilot": {"dangerouslyAllowAllTools": True},
    "opencode": {
        "permission": {"external_directory": "allow"},
        "dangerouslyAllowExternalDirectory": True,
    },
    # Its question to reach outside the working directory is answered by the daemon's policy.
    "opencode-acp": {
        "approveKinds": ["read", "edit", "search", "execute", "think", "fetch", "other"]
    },
}


def _probed(target: BackendTarget, serve: Serve, mode: str) -> Iterator[tuple[Agent, Path]]:
    """The daemon and where its home, state and workspaces are: outside /tmp (see the module's
    docstring)."""
    outside = Path(tempfile.mkdtemp(prefix=f"a2a-sandbox-{target}-{mode}-", dir="/var/tmp"))
    home = outside / "daemon-home"
    home.mkdir()
    (home / "planted.txt").write_text(PLANTED + "\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(home))  # the daemon user's home, as the daemon sees it
        made = serve(
            block={**target.runs_shell, **UNCONFINED.get(target.name, {})},
            workspace={"mode": "worktree", "root": str(outside / "workspaces")},
            storage={"path": str(outside / "state" / "tasks.sqlite3")},
            server={
                "shutdownTimeout": 2000,
                "auth": {"tokens": [{"token": t, "principal": p} for p, t in TOKENS.items()]},
            },
            sandbox={"mode": mode},
        )
    make_repository(made.places.work)
    yield made, outside
    shutil.rmtree(outside, ignore_errors=True)


# Function-scoped, each used by one case: the two daemons of a target never run at once. (Two
# cases, not a parametrized mode: a contract case's id stays `case[target]`.)
@pytest.fixture
def sandboxed(target: BackendTarget, serve: Serve) -> Iterator[tuple[Agent, Path]]:
    yield from _probed(target, serve, "bubblewrap")


@pytest.fixture
def unsandboxed(target: BackendTarget, serve: Serve) -> Iterator[tuple[Agent, Path]]:
    yield from _probed(target, serve, "none")


def send(agent: Agent, who: str, text: str, ctx: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": agent.message(text, contextId=ctx)},
    }
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {TOKENS[who]}"}
    response = httpx.post(
        f"{agent.daemon.url}/a2a/jsonrpc", json=body, headers=headers, timeout=120
    )
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "result" in answer, answer
    task: dict[str, Any] = answer["result"]["task"]
    return task


# Two principals: two agent instances start cold in these cases (the suite's 60 s covers one).
@pytest.mark.timeout(180)
def test_alice_reaches_only_her_own_workspace(
    sandboxed: tuple[Agent, Path], model: MockModel
) -> None:
    reached, jails = _probe(*sandboxed, model)
    assert not any(reached.values()), reached
    assert len(jails) == 2, jails  # one per principal


@pytest.mark.timeout(180)
def test_without_the_sandbox_the_same_probes_reach_everything(
    unsandboxed: tuple[Agent, Path], model: MockModel
) -> None:
    reached, jails = _probe(*unsandboxed, model)
    assert all(reached.values()), reached
    assert not jails


def _probe(agent: Agent, outside: Path, model: MockModel) -> tuple[dict[str, bool], set[str]]:
    """Bob writes his file; alice's shell probes; what her probes reached, read on disk, and
    the sandboxes the daemon started."""
    model.script([Shell(f"printf '{BOB_TEXT}\\n' > bob.txt")])
    bobs = send(agent, "bob", "Write bob.txt.", context())
    assert state(bobs) == COMPLETED, bobs
    bob = Path(wrapper(bobs)["workspace"]["path"])
    assert (bob / "bob.txt").read_text() == BOB_TEXT + "\n"

    state_file = outside / "state" / "tasks.sqlite3"
    planted = outside / "daemon-home" / "planted.txt"
    intruder = f"from-alice-{uuid.uuid4().hex[:6]}.txt"
    probes = " ; ".join(
        [
            f"cat {bob}/bob.txt > got-bob.txt",
            f"echo alice > {bob}/{intruder}",
            f"head -c 15 {state_file} > got-state.txt",
            f"cat {planted} > got-home.txt",
            "echo mine > mine.txt",
            "cat mine.txt > mine-copy.txt",
            "echo done",
        ]
    )
    model.script([Shell(probes)])
    alices = send(agent, "alice", "Run the probes.", context())
    assert state(alices) == COMPLETED, alices
    own = Path(wrapper(alices)["workspace"]["path"])
    assert own.parent != bob.parent, "each principal has a folder of its own"

    assert (own / "mine-copy.txt").read_text() == "mine\n", "alice works in her own workspace"
    reached = {
        "bob's file read": _read(own / "got-bob.txt") == BOB_TEXT + "\n",
        "bob's workspace written": (bob / intruder).exists(),
        "state file read": _read(own / "got-state.txt") == "SQLite format 3",
        "daemon home read": _read(own / "got-home.txt") == PLANTED + "\n",
    }
    jails = {str(e["jail"]) for e in logged(agent.daemon, "sandbox.instance_started")}
    assert (bob / "bob.txt").read_text() == BOB_TEXT + "\n"
    return reached, jails


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


@pytest.fixture(scope="module")
def own_policy(target: BackendTarget, serve: Serve) -> Agent:
    """The agent under its own default policy (Codex: its workspace-write sandbox, which is
    bubblewrap too), inside ours."""
    made = serve(
        block=target.runs_shell, workspace={"mode": "worktree"}, sandbox={"mode": "bubblewrap"}
    )
    make_repository(made.places.work)
    return made


def test_an_agent_that_sandboxes_its_own_commands_runs_them_inside_ours(
    own_policy: Agent, model: MockModel
) -> None:
    model.script([Shell("echo mine > mine.txt && cat mine.txt > copy.txt")])
    task = own_policy.send("Write mine.txt.", context())
    assert state(task) == COMPLETED, task
    workspace = Path(wrapper(task)["workspace"]["path"])
    assert (workspace / "copy.txt").read_text() == "mine\n"
