"""`a2a-wrapper mcp` over stdio, driven by the official `mcp` client (2.x) as an IDE would:
the protocol version negotiated (the handshake and the 2026-07-28 revision), the tools, progress
notifications while waiting, approvals surfaced to the model, changes, and the resources."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp_types import CallToolResult, TextResourceContents

from tests.client.conftest import Serve
from tests.support.daemon import EXE, REPO
from tests.support.git_repo import make_repository
from tests.support.polling import until
from tests.support.scripted import ScriptedBackend

TOOLS = {"list_agents", "send_message", "get_task", "answer", "cancel_task", "get_changes"}


@asynccontextmanager
async def connected(
    *args: str, mode: str = "auto", env: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    params = StdioServerParameters(command=str(EXE), args=["mcp", *args], cwd=REPO, env=env)
    async with Client(params, mode=mode) as client:
        yield client


def text(result: CallToolResult) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


async def call(client: Client, tool: str, **arguments: Any) -> tuple[CallToolResult, list[str]]:
    """The tool's result and the progress messages that came while it ran."""
    said: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        said.append(message or "")

    result = await client.call_tool(tool, arguments, progress_callback=progress)
    return result, said


@pytest.mark.parametrize(("mode", "version"), [("legacy", "2025-"), ("auto", "2026-07-28")])
async def test_the_protocol_is_negotiated_and_the_tools_are_listed(
    daemon: str, mode: str, version: str
) -> None:
    async with connected("--agent", f"coder={daemon}", mode=mode) as client:
        negotiated = client.protocol_version
        tools = await client.list_tools()
        agents, _ = await call(client, "list_agents")

    assert negotiated.startswith(version)
    assert {t.name for t in tools.tools} == TOOLS
    assert agents.structured_content is not None
    [agent] = agents.structured_content["agents"]
    assert (agent["name"], agent["description"]) == ("coder", "scripted")
    assert agent["skills"][0]["name"] == "Echo"
    assert "coder" in text(agents) and "Echo: echoes" in text(agents)


async def test_send_waits_for_the_answer_with_progress_notifications(daemon: str) -> None:
    async with connected("--agent", daemon) as client:
        result, progress = await call(client, "send_message", text="tool: pytest")

    assert not result.is_error
    assert "is completed" in text(result) and "ran pytest" in text(result)
    assert result.structured_content is not None
    assert result.structured_content["answer"] == "ran pytest"
    assert "Running `ls`" in progress


async def test_the_context_is_an_explicit_argument(daemon: str) -> None:
    async with connected("--agent", daemon) as client:
        first, _ = await call(client, "send_message", text="remember this")
        assert first.structured_content is not None
        context_id = first.structured_content["contextId"]
        again, _ = await call(client, "send_message", text="history", context_id=context_id)
        other, _ = await call(client, "send_message", text="history")

    assert again.structured_content is not None and other.structured_content is not None
    assert again.structured_content["answer"] == "remember this"
    assert other.structured_content["answer"] == "(no history)"


async def test_non_blocking_send_then_get_task(daemon: str, backend: ScriptedBackend) -> None:
    async with connected("--agent", daemon) as client:
        started, _ = await call(client, "send_message", text="block", wait=False)
        assert started.structured_content is not None
        task_id = started.structured_content["id"]
        await backend.entered(task_id).wait()
        running, _ = await call(client, "get_task", task_id=task_id)
        backend.release(task_id)
        finished = await until(
            lambda: client.call_tool("get_task", {"task_id": task_id}),
            lambda r: "is completed" in text(r),
        )

    assert started.structured_content["state"] in ("submitted", "working")
    assert f"get_task(task_id={task_id!r})" in text(started)
    assert running.structured_content is not None
    assert running.structured_content["state"] == "working"
    assert finished.structured_content is not None
    assert finished.structured_content["state"] == "completed"
    assert "released" in text(finished)


async def test_a_wait_that_runs_out_returns_the_running_task_and_cancel_stops_it(
    daemon: str, backend: ScriptedBackend
) -> None:
    async with connected("--agent", daemon) as client:
        waited, progress = await call(client, "send_message", text="block", timeout_seconds=2)
        assert waited.structured_content is not None
        task_id = waited.structured_content["id"]
        canceled, _ = await call(client, "cancel_task", task_id=task_id)

    assert waited.structured_content["state"] == "working"
    assert "still running" in text(waited)
    assert "blocking" in progress
    assert canceled.structured_content is not None
    assert canceled.structured_content["state"] == "canceled"
    assert backend.interrupted == [task_id]


async def test_an_approval_reaches_the_model_as_a_question_and_answer_continues_it(
    daemon: str, backend: ScriptedBackend
) -> None:
    async with connected("--agent", daemon) as client:
        asked, _ = await call(client, "send_message", text="approve: make deploy")
        assert asked.structured_content is not None
        task_id = asked.structured_content["id"]
        answered, progress = await call(client, "answer", task_id=task_id, reply="approve")

    assert asked.structured_content["state"] == "input-required"
    question = text(asked)
    assert "Run `make deploy` in the working directory" in question
    assert f"Answer it with the `answer` tool, task_id {task_id!r}" in question
    assert "approve, approve_always, deny" in question
    assert answered.structured_content is not None
    assert answered.structured_content["state"] == "completed"
    assert "ran make deploy" in text(answered)
    assert "Running `make deploy`" in progress
    assert [a.decision for a in backend.answers] == ["approve"]


async def test_errors_are_tool_errors_in_words(daemon: str) -> None:
    async with connected("--agent", daemon) as client:
        unknown, _ = await call(client, "get_task", task_id="no-such-task")
        nobody, _ = await call(client, "get_task", task_id="x", agent="nobody")
        failed, _ = await call(client, "send_message", text="fail: out of disk")

    assert unknown.is_error and "no-such-task" in text(unknown)
    assert nobody.is_error and "no agent named 'nobody'" in text(nobody)
    assert failed.is_error and "is failed" in text(failed) and "out of disk" in text(failed)


async def test_get_changes_returns_the_patch_and_patches_go_in(
    serve: Serve, tmp_path: Path
) -> None:
    repo = make_repository(tmp_path / "repo", {"notes.txt": "original\n"})
    url = await serve(
        backend="claude",
        claude={"workingDirectory": str(repo)},
        storage={"kind": "sqlite", "path": str(tmp_path / "state" / "tasks.sqlite3")},
        workspace={"mode": "worktree"},
    )
    patch = (
        "diff --git a/extra.txt b/extra.txt\nnew file mode 100644\n--- /dev/null\n"
        "+++ b/extra.txt\n@@ -0,0 +1 @@\n+from the caller\n"
    )
    async with connected("--agent", url) as client:
        wrote, _ = await call(client, "send_message", text="write: notes.txt=changed")
        assert wrote.structured_content is not None
        task_id = wrote.structured_content["id"]
        changes, _ = await call(client, "get_changes", task_id=task_id)
        read, _ = await call(
            client,
            "send_message",
            text="read: extra.txt",
            context_id=wrote.structured_content["contextId"],
            patches=[patch],
        )
        summed, _ = await call(client, "get_changes", task_id=task_id, cumulative=True)

    assert "get_changes" in text(wrote)
    assert "+changed" in text(changes) and "-original" in text(changes)
    assert changes.structured_content is not None
    assert changes.structured_content["changes"]["scope"] == "turn"
    assert read.structured_content is not None
    assert read.structured_content["answer"] == "from the caller\n"
    assert "+changed" in text(summed)


async def test_resources_are_the_cards_and_the_transcripts(daemon: str) -> None:
    async with connected("--agent", f"coder={daemon}") as client:
        done, _ = await call(client, "send_message", text="echo: for the record")
        assert done.structured_content is not None
        task_id = done.structured_content["id"]
        listed = await client.list_resources()
        card = await client.read_resource("a2a://agents/coder/card")
        transcript = await client.read_resource(f"a2a://agents/coder/tasks/{task_id}/transcript")

    assert [str(r.uri) for r in listed.resources] == ["a2a://agents/coder/card"]
    [card_text] = card.contents
    assert isinstance(card_text, TextResourceContents)
    assert json.loads(card_text.text)["name"] == "Test agent"
    [lines] = transcript.contents
    assert isinstance(lines, TextResourceContents)
    assert "user: echo: for the record" in lines.text
    assert "answer: for the record" in lines.text


async def test_a_config_file_names_the_agents_and_their_tokens(
    serve: Serve, tmp_path: Path
) -> None:
    token = "a-long-enough-test-token-5678"  # noqa: S105 - a test token
    url = await serve(server={"auth": {"tokens": [{"token": token, "principal": "me"}]}})
    config = tmp_path / "agents.json"
    config.write_text(json.dumps({"agents": {"guarded": {"url": url, "token": "${GUARD_TOKEN}"}}}))
    env = {"GUARD_TOKEN": token, "PATH": "/usr/bin:/bin"}
    async with connected("--config", str(config), env=env) as client:
        done, _ = await call(client, "send_message", agent="guarded", text="echo: let in")

    assert done.structured_content is not None
    assert done.structured_content["answer"] == "let in"
