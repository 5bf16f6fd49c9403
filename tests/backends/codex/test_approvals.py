"""Codex approval requests -> ApprovalRequest, and answers -> JSON-RPC results: pure mapping,
on requests recorded from codex-cli 0.163.0 app-server (approval policy `on-request`)."""

from __future__ import annotations

from typing import Any

import pytest

from core.backend import ApprovalAnswer, Decision
from wrappers.codex.approvals import (
    COMMAND_APPROVAL,
    FILE_APPROVAL,
    PatchPaths,
    approval_request,
    result_for,
)

# Recorded: the model asked to run `touch /etc/codexask_x` escalated, with a justification
# (the working directory renamed).
COMMAND_REQUEST: dict[str, Any] = {
    "kind": "command",
    "threadId": "01a22b51-b42e-7122-b6d7-b6791482d393",
    "turnId": "01a22b51-b440-7fb2-8241-97320de07848",
    "itemId": "call_1",
    "startedAtMs": 1796023104795,
    "environmentId": "local",
    "reason": "Need to write to /etc",
    "command": "/bin/bash -lc 'touch /etc/codexask_x'",
    "cwd": "/srv/project",
    "commandActions": [{"type": "unknown", "command": "touch /etc/codexask_x"}],
    "proposedExecpolicyAmendment": ["touch", "/etc/codexask_x"],
    "availableDecisions": [
        "accept",
        {"acceptWithExecpolicyAmendment": {"execpolicy_amendment": ["touch", "/etc/codexask_x"]}},
        "cancel",
    ],
}

# Recorded: an apply_patch adding /etc/codexask_p.txt; the request names only the item, which
# `item/started` announced just before.
PATCH_STARTED: dict[str, Any] = {
    "threadId": "01a22b52-1431-79a1-bf43-381aae093bed",
    "turnId": "01a22b52-143f-7683-b270-427b34199621",
    "item": {
        "type": "fileChange",
        "id": "call_p",
        "changes": [{"path": "/etc/codexask_p.txt", "kind": {"type": "add"}, "diff": "hello\n"}],
        "status": "inProgress",
    },
}
FILE_REQUEST: dict[str, Any] = {
    "threadId": "01a22b52-1431-79a1-bf43-381aae093bed",
    "turnId": "01a22b52-143f-7683-b270-427b34199621",
    "itemId": "call_p",
    "startedAtMs": 1796023129236,
    "reason": None,
    "grantRoot": None,
}


def test_a_command_request_becomes_a_command_question() -> None:
    question = approval_request("task-1:0", COMMAND_APPROVAL, COMMAND_REQUEST, PatchPaths())

    assert question.request_id == "task-1:0"
    assert question.kind == "command"
    assert question.tool == "shell"
    assert question.summary == (
        "Run `touch /etc/codexask_x` in /srv/project outside the sandbox "
        "(reason: Need to write to /etc)"
    )
    assert question.detail == {
        "command": "touch /etc/codexask_x",
        "cwd": "/srv/project",
        "reason": "Need to write to /etc",
    }


def test_a_compound_command_is_shown_as_codex_runs_it() -> None:
    request = {
        **COMMAND_REQUEST,
        "reason": None,
        "commandActions": [
            {"type": "unknown", "command": "a"},
            {"type": "unknown", "command": "b"},
        ],
    }

    question = approval_request("r", COMMAND_APPROVAL, request, PatchPaths())

    assert question.detail["command"] == "/bin/bash -lc 'touch /etc/codexask_x'"
    assert "reason" not in question.detail
    assert "reason:" not in question.summary


def test_a_file_change_request_names_the_paths_of_its_patch() -> None:
    patches = PatchPaths()
    patches.see("item/started", PATCH_STARTED)

    question = approval_request("task-1:1", FILE_APPROVAL, FILE_REQUEST, patches)

    assert question.kind == "file"
    assert question.tool == "apply_patch"
    assert question.summary == "Change /etc/codexask_p.txt outside the writable roots"
    assert question.detail == {"paths": ["/etc/codexask_p.txt"], "path": "/etc/codexask_p.txt"}


def test_a_file_change_of_an_unseen_item_still_asks() -> None:
    question = approval_request("r", FILE_APPROVAL, FILE_REQUEST, PatchPaths())

    assert question.summary == "Change files outside the writable roots"
    assert question.detail == {"paths": []}


@pytest.mark.parametrize(
    ("decision", "expected"),
    [("approve", "accept"), ("approve_always", "acceptForSession"), ("deny", "decline")],
)
def test_answers_map_to_codex_decisions(decision: Decision, expected: str) -> None:
    assert result_for(ApprovalAnswer(decision, "a note")) == {"decision": expected}
