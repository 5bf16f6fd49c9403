"""The `acp` backend against a small real ACP agent (fake_agent.py, a subprocess speaking the
protocol through the `acp` library's agent side), in the real app: what the three real agents
cannot show on demand (no session/load, plans and diffs, the client's fs/* and terminal/*
confined to the working directory, the option chosen for each decision, cancel)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from aiohttp.test_utils import TestClient

from core.daemon import create_app
from core.settings import load
from tests.backends.copilot.a2a import cancel, get, send, start, stream
from tests.support.daemon import MakeDaemon
from tests.support.wire import call, user_message

FAKE_AGENT = Path(__file__).with_name("fake_agent.py")
Client = TestClient[Any, Any]
App = Callable[..., Awaitable[Client]]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    (path / "inside.txt").write_text("inside text")
    return path


@pytest.fixture
def app(aiohttp_client: Callable[..., Awaitable[Client]], tmp_path: Path, work: Path) -> App:
    """The real app serving `acp` with the fake agent; `acp=` adds block keys."""

    async def make(acp: dict[str, Any] | None = None, **sections: Any) -> Client:
        data: dict[str, Any] = {
            "backend": "acp",
            "storage": {"path": str(tmp_path / "tasks.sqlite3")},
            "acp": {
                "workingDirectory": str(work),
                "command": [sys.executable, str(FAKE_AGENT)],
                **(acp or {}),
            },
            **sections,
        }
        return await aiohttp_client(create_app(load(None, overrides=data, environ={})))

    return make


def answer(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts") or [] for p in a["parts"])


def notes(events: list[dict[str, Any]]) -> list[str]:
    found = []
    for event in events:
        message = event.get("statusUpdate", {}).get("status", {}).get("message") or {}
        found.append("".join(p.get("text", "") for p in message.get("parts") or []))
    return found


def wrapper(task: dict[str, Any]) -> dict[str, Any]:
    section: dict[str, Any] = task["metadata"]["a2aWrapper"]
    return section


async def test_an_agent_without_session_load_says_the_continued_context_is_a_new_session(
    app: App,
) -> None:
    first_app = await app()
    first = await send(first_app, "remember PAPAYA", "ctx-load")
    assert answer(first) == "FAKE: remember PAPAYA"
    await first_app.close()  # the daemon stops; the context's session stays in storage

    again_app = await app()
    events = await stream(again_app, "what was it?", "ctx-load")
    again = await get(again_app, events[-1]["statusUpdate"]["taskId"])

    assert again["status"]["state"] == "TASK_STATE_COMPLETED", again
    assert wrapper(again)["newSession"] is True
    assert wrapper(again)["sessionId"] != wrapper(first)["sessionId"]
    assert any("does not offer session/load" in n for n in notes(events)), notes(events)


async def test_a_plan_and_a_diff_become_progress_and_a_file_change(app: App) -> None:
    client = await app()

    events = await stream(client, "plan", "ctx-plan")

    said = notes(events)
    assert any(n.startswith("Plan:\n- [in_progress] write the file") for n in said), said
    assert "Created new.txt" in said
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_files_are_read_and_written_inside_the_working_directory_only(
    app: App, work: Path, tmp_path: Path
) -> None:
    client = await app()
    outside = tmp_path / "outside.txt"
    outside.write_text("secret outside")
    (work / "link.txt").symlink_to(outside)

    inside = await send(client, f"read {work / 'inside.txt'}", "ctx-fs")
    escaped = await send(client, f"read {outside}", "ctx-fs")
    linked = await send(client, f"read {work / 'link.txt'}", "ctx-fs")
    written = await send(client, f"write {work / 'sub' / 'made.txt'}", "ctx-fs")
    refused = await send(client, f"write {work / '..' / 'escape.txt'}", "ctx-fs")

    assert answer(inside) == "read: inside text"
    assert answer(escaped).startswith("refused:")
    assert answer(linked).startswith("refused:"), "a symlink out of the directory is refused"
    assert "secret outside" not in answer(escaped) + answer(linked)
    assert answer(written) == "wrote it"
    assert (work / "sub" / "made.txt").read_text() == "written"
    assert answer(refused).startswith("refused:")
    assert not (tmp_path / "escape.txt").exists()


async def test_mcp_servers_are_passed_to_the_session(app: App) -> None:
    servers = {
        "calc": {"type": "stdio", "command": "/usr/bin/calc-mcp", "args": ["--x"]},
        "docs": {"type": "http", "url": "http://127.0.0.1:9/mcp"},
    }
    client = await app(acp={"mcpServers": servers})

    task = await send(client, "mcp", "ctx-mcp")

    assert answer(task) == "mcp: calc:stdio:/usr/bin/calc-mcp, docs:http:http://127.0.0.1:9/mcp"


async def test_a_terminal_runs_the_agents_command_and_returns_its_output(app: App) -> None:
    client = await app()

    task = await send(client, "terminal", "ctx-term")

    assert answer(task) == "terminal said: from-terminal"


async def test_the_callers_answers_choose_the_agents_options(app: App) -> None:
    client = await app(approvals={"mode": "ask"})

    asked = await send(client, "ask", "ctx-ask")
    assert asked["status"]["state"] == "TASK_STATE_INPUT_REQUIRED", asked
    question = asked["status"]["message"]["parts"][1]["data"]
    assert (question["kind"], question["tool"], question["summary"]) == (
        "file",
        "edit",
        "Allow touch it",
    )
    always = await _reply(client, asked, "approve always")
    again = await send(client, "ask", "ctx-ask")
    denied_task = await send(client, "ask", "ctx-other")
    denied = await _reply(client, denied_task, "deny")

    assert answer(always) == "outcome: always"
    assert answer(again) == "outcome: yes", "approved always: not asked again in the session"
    assert answer(denied) == "outcome: no", "another session is asked again"


async def test_under_the_policy_only_approve_kinds_are_approved(app: App) -> None:
    denying = await app()
    approving = await app(acp={"approveKinds": ["edit"]})

    assert answer(await send(denying, "ask", "ctx-policy")) == "outcome: no"
    assert answer(await send(approving, "ask", "ctx-policy")) == "outcome: yes"


async def test_cancel_sends_session_cancel_and_the_context_goes_on(app: App) -> None:
    client = await app()
    task_id = await start(client, "hang", "ctx-cancel")
    # The lease names the section's sessionId (None for a new session) before the agent binds one.
    hanging = await _until(
        client, task_id, lambda t: t.get("metadata", {}).get("a2aWrapper", {}).get("sessionId")
    )

    canceled = await cancel(client, task_id)

    assert canceled["status"]["state"] == "TASK_STATE_CANCELED", canceled
    after = await send(client, "still there?", "ctx-cancel")
    assert answer(after) == "FAKE: still there?"
    # The agent stopped the prompt itself: had it been killed, this agent (which cannot load
    # a session) would be on a new one.
    assert wrapper(after)["sessionId"] == wrapper(hanging)["sessionId"]


def test_a_command_that_cannot_start_fails_the_daemons_start_with_the_reason(
    daemons: MakeDaemon, work: Path, tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-agent"
    config = {"backend": "acp", "acp": {"workingDirectory": str(work), "command": [str(missing)]}}

    code, _, err = daemons(config).run_to_exit()

    assert code == 4, err
    assert "did not start" in err
    assert str(missing) in err


async def _until(
    client: Client, task_id: str, done: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The task once `done(task)` holds (polled with a deadline)."""
    with anyio.fail_after(10):
        while not done(task := await get(client, task_id)):  # noqa: ASYNC110 - polls the API
            await anyio.sleep(0.02)
    return task


async def _reply(client: Client, task: dict[str, Any], text: str) -> dict[str, Any]:
    message = user_message(text, taskId=task["id"], contextId=task["contextId"], messageId=text)
    body = await call(client, "SendMessage", {"message": message})
    assert "result" in body, body
    done: dict[str, Any] = body["result"]["task"]
    return done
