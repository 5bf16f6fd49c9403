"""The permission callback of `approvals.mode: ask`: a `can_use_tool` request -> ApprovalRequest,
and the caller's answer -> what Claude Code is told. The contexts are the ones Claude Code
2.1.332 sent (measured against the mock)."""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from claude_agent_sdk import (
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ToolPermissionContext,
)
from claude_agent_sdk.types import PermissionRuleValue

from core.backend import ApprovalAnswer, ApprovalRequest
from wrappers.claude.approvals import NO_TURN, Approver, approval_request, session_rules

SUGGESTION = PermissionUpdate(
    type="addRules",
    rules=[PermissionRuleValue("Bash", "git init *")],
    behavior="allow",
    destination="localSettings",
)
BASH_CONTEXT = ToolPermissionContext(
    tool_use_id="toolu_1",
    decision_reason="This command requires approval",
    display_name="Bash",
    description="make a repository",
    suggestions=[
        SUGGESTION,
        PermissionUpdate(type="setMode", mode="acceptEdits", destination="session"),
    ],
)


@pytest.mark.parametrize(
    ("tool", "tool_input", "kind", "summary", "extra"),
    [
        (
            "Bash",
            {"command": "git init", "description": "make a repository"},
            "command",
            "Run `git init` in the working directory",
            {"command": "git init", "reason": "This command requires approval"},
        ),
        (
            "Write",
            {"file_path": "/srv/notes.txt", "content": "x"},
            "file",
            "Write /srv/notes.txt",
            {"path": "/srv/notes.txt"},
        ),
        (
            "MultiEdit",
            {"file_path": "/srv/a.py", "edits": []},
            "file",
            "Edit /srv/a.py",
            {"path": "/srv/a.py"},
        ),
        (
            "WebFetch",
            {"url": "https://example.com/", "prompt": "read it"},
            "other",
            "Fetch https://example.com/ (WebFetch)",
            {"url": "https://example.com/"},
        ),
        (
            "mcp__docs__search",
            {"query": "anyio"},
            "tool",
            "Use the MCP tool search of the server docs",
            {},
        ),
        ("TodoWrite", {"todos": []}, "tool", "Use the tool TodoWrite", {}),
    ],
)
def test_a_request_becomes_a_described_approval_request(
    tool: str, tool_input: dict[str, Any], kind: str, summary: str, extra: dict[str, Any]
) -> None:
    context = BASH_CONTEXT if tool == "Bash" else ToolPermissionContext(tool_use_id="t")

    request = approval_request(tool, tool_input, context)

    assert request.kind == kind
    assert request.tool == tool
    assert request.summary == summary
    assert dict(request.detail) == {"input": tool_input, **extra}
    assert request.request_id
    assert not request.reply.answered


def test_the_blocked_path_and_claude_codes_own_title_are_kept() -> None:
    context = ToolPermissionContext(
        tool_use_id="t", blocked_path="/etc/passwd", title="Claude wants to use Odd"
    )

    request = approval_request("Odd", {}, context)

    assert request.summary == "Claude wants to use Odd"
    assert request.detail["blockedPath"] == "/etc/passwd"


def test_a_long_command_is_clipped_in_the_summary_but_whole_in_the_detail() -> None:
    command = "echo " + "x" * 500

    request = approval_request("Bash", {"command": command}, BASH_CONTEXT)

    assert len(request.summary) < 260
    assert request.detail["command"] == command


def test_approve_always_keeps_claude_codes_suggested_rules_for_the_session_only() -> None:
    (rule,) = session_rules(BASH_CONTEXT)

    assert rule.to_dict() == {
        "type": "addRules",
        "destination": "session",
        "rules": [{"toolName": "Bash", "ruleContent": "git init *"}],
        "behavior": "allow",
    }


async def ask(
    approver: Approver, answer: ApprovalAnswer | None, context: ToolPermissionContext
) -> tuple[Any, list[ApprovalRequest]]:
    """One callback call during a turn; `answer` is given to the question it asks."""
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    asked: list[ApprovalRequest] = []
    approver.begin(send)
    result: Any = None

    async def call() -> None:
        nonlocal result
        result = await approver.can_use_tool("Bash", {"command": "git init"}, context)

    with receive:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            if answer is not None:
                question = await receive.receive()
                asked.append(question)
                question.reply.answer(answer)
    approver.end()
    return result, asked


async def test_approve_allows_and_deny_tells_the_agent_the_callers_message() -> None:
    approver = Approver()

    allowed, asked = await ask(approver, ApprovalAnswer("approve"), BASH_CONTEXT)
    denied, _ = await ask(approver, ApprovalAnswer("deny", "Not today."), BASH_CONTEXT)
    bare, _ = await ask(approver, ApprovalAnswer("deny"), BASH_CONTEXT)

    assert asked[0].summary == "Run `git init` in the working directory"
    assert allowed == PermissionResultAllow()
    assert denied == PermissionResultDeny(message="Not today.")
    assert bare == PermissionResultDeny(message="The caller denied this.")


async def test_approve_always_without_a_suggestion_is_remembered_by_the_client() -> None:
    approver = Approver()
    plain = ToolPermissionContext(tool_use_id="t")

    first, asked = await ask(approver, ApprovalAnswer("approve_always"), plain)
    second, asked_again = await ask(approver, None, plain)

    assert first == PermissionResultAllow()
    assert len(asked) == 1
    assert second == PermissionResultAllow()
    assert asked_again == []


async def test_approve_always_with_a_suggestion_hands_the_rule_to_claude_code() -> None:
    result, _ = await ask(Approver(), ApprovalAnswer("approve_always"), BASH_CONTEXT)

    assert isinstance(result, PermissionResultAllow)
    assert result.updated_permissions == session_rules(BASH_CONTEXT)


async def test_a_question_without_a_running_turn_is_denied() -> None:
    result = await Approver().can_use_tool("Bash", {"command": "git init"}, BASH_CONTEXT)

    assert result == PermissionResultDeny(message=NO_TURN)


async def test_a_question_still_waiting_when_the_turn_ends_is_denied() -> None:
    approver = Approver()
    send, receive = anyio.create_memory_object_stream[Any](math.inf)
    approver.begin(send)
    results: list[Any] = []

    async def call() -> None:
        results.append(await approver.can_use_tool("Bash", {"command": "make"}, BASH_CONTEXT))

    with receive:
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await receive.receive()
            approver.end()

    assert results == [PermissionResultDeny(message="The turn was stopped.")]
