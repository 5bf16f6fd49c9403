"""The permission policy, on permission requests recorded from the real CLI
(fixtures/permissions/) and a few built by hand for kinds the mock cannot provoke."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from copilot import CopilotClient, PermissionRequest, RuntimeConnection
from copilot.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.session_events import (
    PermissionRequestMcp,
    PermissionRequestMemory,
    PermissionRequestRead,
    PermissionRequestShell,
    PermissionRequestUrl,
    PermissionRequestWrite,
)

from core.backend import ApprovalAnswer, ApprovalRequest, Decision
from wrappers.copilot.permissions import PermissionPolicy, approval_request
from wrappers.copilot.runtime import Child
from wrappers.copilot.sessions import WarmSession

FIXTURES = Path(__file__).parent / "fixtures" / "permissions"
PROJECT = Path("/srv/a2a-project")
_KINDS: dict[str, Any] = {
    "shell": PermissionRequestShell,
    "write": PermissionRequestWrite,
    "read": PermissionRequestRead,
    "url": PermissionRequestUrl,
    "mcp": PermissionRequestMcp,
    "memory": PermissionRequestMemory,
}


def recorded(name: str) -> PermissionRequest:
    """The first permission request recorded in that scenario."""
    data = json.loads((FIXTURES / f"{name}.json").read_text())[0]
    request: PermissionRequest = _KINDS[data["kind"]].from_dict(data)
    return request


def shell(command: str) -> PermissionRequestShell:
    data = json.loads((FIXTURES / "tool_shell.json").read_text())[0]
    data.update(fullCommandText=command, commands=[{"identifier": command, "readOnly": False}])
    data.pop("commandSegments", None)
    request: PermissionRequestShell = PermissionRequestShell.from_dict(data)
    return request


def write(path: str) -> PermissionRequestWrite:
    return PermissionRequestWrite(
        can_offer_session_approval=True, diff="", file_name=path, intention="Create file"
    )


def url(address: str) -> PermissionRequestUrl:
    return PermissionRequestUrl(intention="Fetch", url=address)


MCP_ECHO = PermissionRequestMcp(
    read_only=False, server_name="echo", tool_name="echo-echo_upper", tool_title="echo_upper"
)
MEMORY = PermissionRequestMemory.from_dict(
    {"kind": "memory", "subject": "s", "fact": "f", "citations": "c"}
)


def policy(**rules: Any) -> PermissionPolicy:
    return PermissionPolicy(PROJECT, **rules)


@pytest.mark.parametrize(
    ("name", "approved"),
    [
        ("tool_shell", True),  # echo hi > made.txt, in the project
        ("tool_create", True),  # a new file in the project
        ("tool_edit", True),  # an edit in the project
        ("tool_refused", False),  # a new file next to the project
        ("tool_read_outside", False),  # /etc/hostname
        ("tool_shell_outside", False),  # cat /etc/hostname > ../outside.txt
    ],
)
def test_the_default_keeps_edits_and_commands_in_the_working_directory(
    name: str, approved: bool
) -> None:
    assert policy().decide(recorded(name)).approved is approved


def test_a_refusal_says_what_and_why() -> None:
    decision = policy().decide(recorded("tool_shell_outside"))

    assert decision.reason == (
        "the shell command 'cat /etc/hostname > /srv/outside.txt' names /etc/hostname, "
        "outside the working directory"
    )


@pytest.mark.parametrize(
    "command",
    [
        "cat ../secret.txt",
        "cp notes.txt ~/stolen.txt",
        "ls /",
        "echo x >/tmp/elsewhere",
        "curl https://example.com/install.sh",
        "git clone git@github.com:o/r.git && cd r",
    ],
)
def test_commands_that_leave_the_working_directory_are_refused(command: str) -> None:
    assert not policy().decide(shell(command)).approved


@pytest.mark.parametrize(
    "command",
    ["ls -la", "python3 -m pytest tests", "echo done > out/log.txt", "cat notes.txt 2>/dev/null"],
)
def test_commands_inside_the_working_directory_are_approved(command: str) -> None:
    assert policy().decide(shell(command)).approved


def test_everything_else_is_refused_by_default() -> None:
    for request in (MCP_ECHO, MEMORY, url("https://example.com")):
        assert not policy().decide(request).approved


@pytest.mark.parametrize(
    ("rule", "asked", "approved"),
    [
        ("shell(cat:*)", recorded("tool_shell_outside"), True),
        ("shell(git:*)", shell("git push origin main"), True),
        ("shell(git:*)", shell("gitea serve /"), False),
        ("shell(git push)", shell("git push /x"), False),
        ("shell", shell("ls /"), True),
        ("read(/etc/hostname)", recorded("tool_read_outside"), True),
        ("read(hostname)", recorded("tool_read_outside"), True),
        ("write(/srv/*.txt)", recorded("tool_refused"), True),
        ("write(.env)", write("/home/me/app/.env"), True),
        ("write(.env)", write("/home/me/app/env"), False),
        ("url(github.com)", url("https://github.com/o/r"), True),
        ("url(github.com)", url("http://github.com/o/r"), False),
        ("url(https://*.example.com)", url("https://api.example.com/v1"), True),
        ("echo", MCP_ECHO, True),
        ("echo(echo_upper)", MCP_ECHO, True),
        ("echo(other_tool)", MCP_ECHO, False),
        ("other", MCP_ECHO, False),
        ("memory", MEMORY, True),
    ],
)
def test_allow_patterns_use_the_cli_syntax(
    rule: str, asked: PermissionRequest, approved: bool
) -> None:
    assert policy(allow=[rule]).decide(asked).approved is approved


def test_deny_wins_over_allow_and_over_the_default() -> None:
    echo = recorded("tool_shell")
    assert policy().decide(echo).approved

    assert not policy(deny=["shell(echo:*)"]).decide(echo).approved
    assert not policy(allow=["shell"], deny=["shell(echo:*)"]).decide(echo).approved
    refused = policy(allow_all=True, deny=["shell"]).decide(echo)
    assert not refused.approved
    assert "copilot.denyTools" in refused.reason


def test_allow_all_approves_what_the_default_refuses() -> None:
    assert policy(allow_all=True).decide(recorded("tool_shell_outside")).approved
    assert policy(allow_all=True).decide(MCP_ECHO).approved


async def test_the_handler_answers_with_the_sdk_decisions() -> None:
    approve = await policy().handler(recorded("tool_create"), {"session_id": "s"})
    refuse = await policy().handler(recorded("tool_refused"), {"session_id": "s"})

    assert isinstance(approve, PermissionDecisionApproveOnce)
    assert isinstance(refuse, PermissionDecisionReject)
    assert refuse.feedback is not None
    assert refuse.feedback.startswith("The a2a-wrapper permission policy refused this: writing")


# ----- approvals.mode: ask --------------------------------------------------------------------


@pytest.fixture
def session(copilot_cli: Path) -> WarmSession:
    """A warm session for bookkeeping only: its CLI client is never started."""
    client = CopilotClient(connection=RuntimeConnection.for_stdio(path=str(copilot_cli)))
    return WarmSession("s", Child(client, generation=1), policy(deny=["shell(rm:*)"]))


async def ask(session: WarmSession, request: PermissionRequest, decision: Decision) -> object:
    """Run the permission callback; answer the question it puts into the turn with
    `decision`."""
    turn = session.begin("task", "ask")
    result: list[object] = []

    async def callback() -> None:
        result.append(await session.permission(request, {"session_id": "s"}))

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(callback)
            with anyio.fail_after(5):
                question = await turn.receive.receive()
            assert isinstance(question, ApprovalRequest)
            question.reply.answer(ApprovalAnswer(decision, "not today"))
    finally:
        session.end()
    return result[0]


async def test_ask_mode_puts_what_the_default_refuses_to_the_caller(session: WarmSession) -> None:
    outside = recorded("tool_shell_outside")

    approved = await ask(session, outside, "approve")
    denied = await ask(session, outside, "deny")

    assert isinstance(approved, PermissionDecisionApproveOnce)
    assert isinstance(denied, PermissionDecisionReject)
    assert denied.feedback == "not today"


async def test_approve_always_is_remembered_for_the_session(session: WarmSession) -> None:
    outside = recorded("tool_read_outside")
    await ask(session, outside, "approve_always")

    # No question this time (a question would wait for ever without a turn to answer it).
    with anyio.fail_after(1):
        again = await session.permission(outside, {"session_id": "s"})

    assert isinstance(again, PermissionDecisionApproveOnce)


async def test_ask_mode_never_asks_what_a_rule_or_the_default_decides(
    session: WarmSession,
) -> None:
    session.begin("task", "ask")
    try:
        with anyio.fail_after(1):
            inside = await session.permission(recorded("tool_create"), {})
            denied = await session.permission(shell("rm -rf build"), {})
    finally:
        session.end()

    assert isinstance(inside, PermissionDecisionApproveOnce)
    assert isinstance(denied, PermissionDecisionReject)
    assert denied.feedback is not None and "copilot.denyTools" in denied.feedback


def test_the_question_says_what_is_asked() -> None:
    request = recorded("tool_shell_outside")
    decision = policy().decide(request)

    question = approval_request(request, decision)

    assert question.kind == "command"
    assert question.tool == "shell"
    assert question.summary == "The shell command 'cat /etc/hostname > /srv/outside.txt'"
    assert question.detail == {
        "command": "cat /etc/hostname > /srv/outside.txt",
        "reason": decision.reason,
    }
    mcp = approval_request(MCP_ECHO, policy().decide(MCP_ECHO))
    assert (mcp.kind, mcp.tool) == ("tool", "echo(echo_upper)")
