"""End to end with real agent CLIs on their mock models.

The client commands take a real Codex's approval question (pending, answer) and its worktree
turn's patch (changes --apply). Then a real IDE agent uses the MCP face: the real Claude Code
CLI (served by a Claude daemon, on the Anthropic mock) has `a2a-wrapper mcp --agent <the Codex
daemon>` as an MCP server; its mock model calls `send_message`, Codex runs the turn in a
worktree, and Claude's next model request carries the answer; `get_changes` brings the patch;
an approval Codex asks for reaches Claude as a question, and Claude's `answer` lets it run.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.mock_models.model import MockModel
from harness.mock_models.steps import CallTool, Shell
from tests.client.conftest import Cli
from tests.contract.targets import ESCALATION, TARGETS, BackendTarget, Places
from tests.support.daemon import EXE, Daemon, Daemons
from tests.support.git_repo import git, make_repository

pytestmark = pytest.mark.timeout(600)

CODEX = next(t for t in TARGETS if t.name == "codex")
CLAUDE = next(t for t in TARGETS if t.name == "claude")
_AMBIENT = ("ANTHROPIC_", "CLAUDE_", "CODEX_", "A2A_TOKEN")
TOOLS = ("send_message", "get_task", "answer", "get_changes")
TASK = re.compile(r"Task (\S+) \(context_id")


@dataclass
class Served:
    daemon: Daemon
    model: MockModel
    places: Places

    @property
    def url(self) -> str:
        return self.daemon.url


@pytest.fixture(scope="module")
def _hermetic() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.startswith(_AMBIENT) or name == "OPENAI_API_KEY":
                patch.delenv(name)
        yield


def _model(target: BackendTarget) -> Iterator[MockModel]:
    with MockModel(target.mock, api_key=target.api_key) as model:
        yield model


@pytest.fixture(scope="module")
def codex_model(_hermetic: None) -> Iterator[MockModel]:
    yield from _model(CODEX)


@pytest.fixture(scope="module")
def claude_model(_hermetic: None) -> Iterator[MockModel]:
    yield from _model(CLAUDE)


def _start(root: Path, config: dict[str, Any]) -> Iterator[Daemon]:
    daemons = Daemons(root)
    daemon = daemons(
        {"storage": {"path": str(root / "tasks.sqlite3")}, **config}
        | {"server": {"shutdownTimeout": 2000}}
    )
    try:
        daemon.start()
        yield daemon
    finally:
        daemons.close()


def _codex(
    model: MockModel, tmp_path_factory: pytest.TempPathFactory, **sections: Any
) -> Iterator[Served]:
    """A Codex daemon whose contexts each work in a worktree of a git project."""
    root = tmp_path_factory.mktemp("codex-daemon")
    places = Places(root, tmp_path_factory.mktemp("cache"))
    block = {**CODEX.block(model.url, places), **sections.pop("codex", {})}
    make_repository(places.work, {"README.md": "a project\n"})
    config = {"backend": "codex", "codex": block, "workspace": {"mode": "worktree"}, **sections}
    for daemon in _start(root, config):
        yield Served(daemon, model, places)


@pytest.fixture(scope="module")
def codex(codex_model: MockModel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Codex on its own policy (its workspace-write sandbox): it edits its worktree without
    asking."""
    yield from _codex(codex_model, tmp_path_factory)


@pytest.fixture(scope="module")
def asking(codex_model: MockModel, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """Codex under `approvals.mode: ask`: what its policy does not decide is asked."""
    yield from _codex(codex_model, tmp_path_factory, approvals={"mode": "ask"})


@pytest.fixture(scope="module")
def claude(
    claude_model: MockModel,
    codex: Served,
    asking: Served,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Served]:
    """A Claude daemon whose Claude Code has both Codex daemons behind one MCP server."""
    root = tmp_path_factory.mktemp("claude-daemon")
    places = Places(root, tmp_path_factory.mktemp("cache"))
    places.work.mkdir(parents=True)
    block = CLAUDE.block(claude_model.url, places)
    block["mcpServers"] = {
        "a2a": {
            "type": "stdio",
            "command": str(EXE),
            "args": ["mcp", "--agent", f"codex={codex.url}", "--agent", f"asking={asking.url}"],
        }
    }
    block["allowedTools"] = [f"mcp__a2a__{tool}" for tool in TOOLS]
    for daemon in _start(root, {"backend": "claude", "claude": block}):
        yield Served(daemon, claude_model, places)


def marker(codex: Served) -> Path:
    """A file for Codex's command to write, outside its workspace: its sandbox asks first."""
    folder = codex.places.root / "outside"
    folder.mkdir(exist_ok=True)
    return folder / f"ran-{uuid.uuid4().hex[:6]}.txt"


def send(agent: Served, text: str, context_id: str) -> dict[str, Any]:
    """A blocking SendMessage (v1.0 JSON-RPC) to a daemon: the task."""
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
        "contextId": context_id,
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    response = httpx.post(
        f"{agent.url}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}, timeout=300
    )
    result: dict[str, Any] = response.json()["result"]["task"]
    return result


def tool_output_with(model: MockModel, text: str) -> str:
    """The tool result the model was sent that holds `text` (waits for the request)."""
    request = model.wait_for_request(
        lambda r: any(text in out for out in r.tool_outputs()), timeout=300
    )
    return next(out for out in request.tool_outputs() if text in out)


# ----- the client commands on a real agent -------------------------------------------------


async def test_a_real_codex_approval_is_pending_and_answer_approve_runs_it(
    cli: Cli, asking: Served
) -> None:
    codex = asking
    codex.model.reset()
    target = marker(codex)
    command = CODEX.approval_command(target)
    codex.model.script([Shell(command, escalate=ESCALATION)])

    asked = await cli("send", codex.url, "Please run the command.", "--json")
    assert asked.code == 3, asked
    task = json.loads(asked.out)
    assert command in task["question"]["text"]
    pending = await cli("pending", codex.url)
    assert task["id"] in pending.out and command in pending.out
    assert not target.exists()

    done = await cli("answer", codex.url, task["id"], "approve")

    assert done.code == 0, done
    assert target.read_text().strip() == "ran"
    assert "  `echo ran > " in done.err and "` exited 0" in done.err, "the step, as progress"


async def test_changes_of_a_real_codex_worktree_turn_apply_to_a_clone(
    cli: Cli, codex: Served, tmp_path: Path
) -> None:
    codex.model.reset()
    # Edits are shell commands, as in the contract suite: every agent runs them in its cwd.
    codex.model.script([Shell("printf 'written by codex\\n' > notes.txt")])

    sent = await cli("send", codex.url, "Please write the notes.", "--json")
    assert sent.code == 0, sent
    task_id = json.loads(sent.out)["id"]
    scratch = tmp_path / "scratch"
    git(tmp_path, "clone", "-q", str(codex.places.work), str(scratch))
    applied = await cli("changes", codex.url, task_id, "--apply", str(scratch))

    assert applied.code == 0, applied
    assert (scratch / "notes.txt").read_text() == "written by codex\n"
    assert not (codex.places.work / "notes.txt").exists(), "Codex worked in a worktree"


# ----- a real IDE agent on the MCP face -------------------------------------------------------


def test_claude_hands_a_task_to_codex_and_takes_its_patch(claude: Served, codex: Served) -> None:
    claude.model.reset()
    codex.model.reset()
    context = f"ctx-{uuid.uuid4().hex[:8]}"
    codex.model.script([Shell("printf 'hello from codex\\n' > hello.txt")])
    claude.model.script(
        [CallTool("mcp__a2a__send_message", {"agent": "codex", "text": "Write hello.txt."})]
    )

    first = send(claude, "Hand the file to codex.", context)
    answer = tool_output_with(claude.model, "is completed")

    assert first["status"]["state"] == "TASK_STATE_COMPLETED", first
    assert "get_changes" in answer, "the answer says there is a patch to take"
    match = TASK.search(answer)
    assert match is not None, answer
    claude.model.script(
        [CallTool("mcp__a2a__get_changes", {"agent": "codex", "task_id": match.group(1)})]
    )

    second = send(claude, "Now take the changes.", context)
    patch = tool_output_with(claude.model, "+hello from codex")

    assert second["status"]["state"] == "TASK_STATE_COMPLETED", second
    assert "diff --git a/hello.txt b/hello.txt" in patch
    assert not (codex.places.work / "hello.txt").exists(), "Codex worked in a worktree"


def test_claude_answers_the_approval_codex_asks_for(claude: Served, asking: Served) -> None:
    codex = asking
    claude.model.reset()
    codex.model.reset()
    context = f"ctx-{uuid.uuid4().hex[:8]}"
    target = marker(codex)
    command = CODEX.approval_command(target)
    codex.model.script([Shell(command, escalate=ESCALATION)])
    claude.model.script(
        [CallTool("mcp__a2a__send_message", {"agent": "asking", "text": "Run the command."})]
    )

    send(claude, "Hand the command to codex.", context)
    question = tool_output_with(claude.model, "permission request")

    assert "is input-required" in question and command in question
    assert not target.exists()
    match = TASK.search(question)
    assert match is not None, question
    claude.model.script(
        [
            CallTool(
                "mcp__a2a__answer",
                {"agent": "asking", "task_id": match.group(1), "reply": "approve"},
            )
        ]
    )

    send(claude, "Approve it.", context)
    done = tool_output_with(claude.model, "is completed")

    assert match.group(1) in done
    assert target.read_text().strip() == "ran"
