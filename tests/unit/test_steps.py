"""Progress worth reading (core.backend.steps): one line per tool step and its result, and the
same facts as data, from the shapes the agents' tool calls come in."""

from __future__ import annotations

from typing import Any

import pytest

from core.backend import FileChange, ToolCall, ToolResult
from core.backend.steps import PROGRESS_TYPE, call_step, file_step, result_step


@pytest.mark.parametrize(
    ("name", "tool_input", "said"),
    [
        ("Bash", {"command": "pytest -q", "description": "run the tests"}, "Running `pytest -q`"),
        ("shell", {"command": ["bash", "-lc", "pytest -q"], "cwd": "/w"}, "Running `pytest -q`"),
        ("shell", ["git", "status", "--short"], "Running `git status --short`"),
        ("shell", {"command": "/bin/bash -lc 'echo hi > a.txt'"}, "Running `echo hi > a.txt`"),
        ("run_shell_command", {"command": "make lint"}, "Running `make lint`"),
        (
            "Edit",
            {"file_path": "src/a.py", "old_string": "a", "new_string": "b\nc"},
            "Editing src/a.py (+2 -1)",
        ),
        (
            "edit",
            {"filePath": "src/a.py", "oldString": "x", "newString": "y"},
            "Editing src/a.py (+1 -1)",
        ),
        ("Write", {"file_path": "notes.txt", "content": "one\ntwo\n"}, "Writing notes.txt (+2 -0)"),
        ("apply_patch", {"paths": ["a.py", "b.py"]}, "Editing a.py, b.py"),
        ("Read", {"file_path": "README.md"}, "Reading README.md"),
        ("Grep", {"pattern": "TODO"}, "Searching TODO"),
        ("mcp__calc__add", {"a": 2, "b": 40}, "Running tool mcp__calc__add"),
    ],
)
def test_a_tool_call_says_what_it_does(name: str, tool_input: Any, said: str) -> None:
    step = call_step(ToolCall("c1", name, tool_input))

    assert step.text == said
    assert step.data["type"] == PROGRESS_TYPE
    assert step.data["tool"] == name


@pytest.mark.parametrize(
    ("call", "result", "said", "outcome"),
    [
        (
            ToolCall("c", "Bash", {"command": "pytest -q"}),
            ToolResult("c", "3 passed"),
            "`pytest -q` done",
            "done",
        ),
        (
            ToolCall("c", "shell", {"command": "pytest -q"}),
            ToolResult("c", "1 failed", True, 1),
            "`pytest -q` exited 1: 1 failed",
            "exited 1: 1 failed",
        ),
        (
            ToolCall("c", "Bash", {"command": "false"}),
            ToolResult("c", "Exit code 2\nno", True),
            "`false` exited 2: no",
            "exited 2: no",
        ),
        (
            ToolCall("c", "Edit", {"file_path": "a.py"}),
            ToolResult("c", "ok"),
            "Edited a.py",
            "done",
        ),
        (
            ToolCall("c", "Write", {"file_path": "a.py"}),
            ToolResult("c", "denied", True),
            "a.py failed: denied",
            "failed: denied",
        ),
    ],
)
def test_a_result_says_how_the_step_ended(
    call: ToolCall, result: ToolResult, said: str, outcome: str
) -> None:
    step = result_step(result, call)

    assert step.text == said
    assert step.data["outcome"] == outcome
    assert step.data["callId"] == "c"


def test_a_result_of_an_unseen_call_still_says_something() -> None:
    assert (
        result_step(ToolResult("x", "boom", is_error=True), None).text == "a tool step failed: boom"
    )


def test_a_file_change_says_what_happened_to_the_file() -> None:
    assert file_step(FileChange("src/a.py", "add")).text == "Created src/a.py"
    assert file_step(FileChange("src/a.py", "modify")).text == "Edited src/a.py"
    assert file_step(FileChange("src/a.py", "delete")).text == "Deleted src/a.py"


def test_a_long_command_is_clipped_to_one_line() -> None:
    step = call_step(ToolCall("c", "Bash", {"command": "echo " + "x" * 200 + "\nsecond"}))

    assert "\n" not in step.text
    assert len(step.text) < 100
