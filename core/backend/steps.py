"""Progress worth reading: what a tool step does and how it ended, said once for every backend.

A backend reports `ToolCall`, `ToolResult` and `FileChange` events in its agent's own terms
(a shell tool with `{"command": ...}` or an argv list, an edit tool with `file_path` or
`filePath`, ...). `call_step` and `result_step` turn them into one line a person
reads (`Running \\`pytest -q\\``, `Editing src/a.py`, `\\`pytest -q\\` exited 0`) and the same facts
as data (tool, input summary, outcome), so no wrapper words its own progress.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from core.backend import FileChange, ToolCall, ToolResult

PROGRESS_TYPE = "a2a-wrapper/progress"
_LIMIT = 80
_EXIT = re.compile(r"\bexit(?:ed with)?(?: code|_code|Code)?[:= ]\s*(-?\d+)", re.IGNORECASE)
_COMMAND_KEYS = ("command", "cmd", "commandLine", "script")
_PATH_KEYS = ("file_path", "filePath", "path", "notebook_path", "file", "filename", "target")
_SEARCH_KEYS = ("pattern", "query", "regex", "glob")
# Verbs by what the tool's name says it does, first match wins (names are lowercased).
_VERBS = (
    (("read", "view", "cat", "open"), "Reading"),
    (("multiedit", "edit", "replace", "patch", "str_replace", "modify"), "Editing"),
    (("write", "create", "save"), "Writing"),
    (("delete", "remove"), "Deleting"),
    (("grep", "glob", "search", "find", "ls", "list"), "Searching"),
    (("fetch", "web", "url", "browse"), "Fetching"),
)
_PAST = {
    "Reading": "Read",
    "Editing": "Edited",
    "Writing": "Wrote",
    "Deleting": "Deleted",
    "Searching": "Searched",
    "Fetching": "Fetched",
    "Running": "Ran",
}
_FILE_DONE = {"add": "Created", "modify": "Edited", "delete": "Deleted"}


@dataclass(frozen=True)
class Step:
    """One progress note: `text` for people, `data` for programs (the `a2a-wrapper/progress`
    data part: `tool`, `input`, and for a result `outcome`)."""

    text: str
    data: dict[str, Any] = field(default_factory=dict)


def call_step(call: ToolCall) -> Step:
    """What the agent is about to do."""
    summary, verb = _summary(call.name, call.input)
    if verb == "Running" and summary:
        text = f"Running `{summary}`"
    elif summary:
        text = f"{verb} {summary}"
    else:
        text = f"Running tool {call.name}"
    changed = _lines_changed(call.input)
    if changed:
        text += f" ({changed})"
    data = {"type": PROGRESS_TYPE, "tool": call.name, "input": summary, "callId": call.call_id}
    return Step(text, data)


def result_step(result: ToolResult, call: ToolCall | None) -> Step:
    """How a step ended, in one line; `call` is the step's `ToolCall` when it was seen."""
    name = call.name if call is not None else ""
    summary, verb = _summary(name, call.input) if call is not None else ("", "Running")
    code = result.exit_code if result.exit_code is not None else _exit_code(result.output)
    first = _first_line(result.output)
    subject = f"`{summary}`" if summary and verb == "Running" else summary
    subject = subject or (f"tool {name}" if name else "a tool step")
    if code is not None:
        outcome = f"exited {code}" + (f": {first}" if code != 0 and first else "")
        text = f"{subject} {outcome}"
    elif result.is_error:
        outcome = f"failed: {first}" if first else "failed"
        text = f"{subject} {outcome}"
    else:
        outcome = "done"
        text = f"{_PAST[verb]} {summary}" if summary and verb != "Running" else f"{subject} done"
    data: dict[str, Any] = {
        "type": PROGRESS_TYPE,
        "tool": name,
        "input": summary,
        "callId": result.call_id,
        "outcome": outcome,
        "error": result.is_error,
    }
    if code is not None:
        data["exitCode"] = code
    return Step(text, data)


def file_step(change: FileChange) -> Step:
    text = f"{_FILE_DONE.get(change.kind, 'Changed')} {change.path}"
    data = {"type": PROGRESS_TYPE, "tool": "file", "input": change.path, "outcome": change.kind}
    return Step(text, data)


def _summary(name: str, value: Any) -> tuple[str, str]:
    """(what the step works on, the verb for it): a command, a path, a search."""
    lowered = name.lower()
    verb = next((v for words, v in _VERBS if any(w in lowered for w in words)), "Running")
    if isinstance(value, str | list):
        return _command(value), "Running"
    found = _subject(value) if isinstance(value, dict) else None
    if found is None:
        return "", verb
    subject, kind = found
    if kind == "command":
        return _command(subject), "Running"
    if kind == "url":
        return _clip(str(subject)), "Fetching"
    # A tool named for nothing we know that works on a path edits it; on a pattern, searches.
    default = "Editing" if kind == "path" else "Searching"
    return _clip(str(subject)) if kind == "search" else str(subject), (
        default if verb == "Running" else verb
    )


def _subject(value: dict[str, Any]) -> tuple[Any, str] | None:
    for key in _COMMAND_KEYS:
        if value.get(key):
            return value[key], "command"
    for key in _PATH_KEYS:
        if isinstance(value.get(key), str) and value[key]:
            return value[key], "path"
    paths = value.get("paths")
    if isinstance(paths, list) and paths:
        return ", ".join(str(p) for p in paths), "path"
    for key in _SEARCH_KEYS:
        if isinstance(value.get(key), str) and value[key]:
            return value[key], "search"
    if isinstance(value.get("url"), str):
        return value["url"], "url"
    return None


def _command(value: Any) -> str:
    """A command line as the user would type it; `bash -lc "X"` is shown as X."""
    if isinstance(value, list):
        parts = [str(p) for p in value]
    else:
        try:
            parts = shlex.split(str(value))
        except ValueError:
            return _clip(str(value))
        if not _wrapped(parts):
            return _clip(str(value))
    if _wrapped(parts):
        return _clip(parts[2])
    return _clip(shlex.join(parts))


def _wrapped(parts: list[str]) -> bool:
    """`bash -lc X` (or another shell's `-c`): an agent's way to run the command X."""
    shells = ("sh", "bash", "zsh")
    return len(parts) == 3 and parts[0].rsplit("/", 1)[-1] in shells and parts[1] in ("-c", "-lc")


def _lines_changed(value: Any) -> str:
    """`+3 -1` for an edit whose input carries the old and new text (or a new file's)."""
    if not isinstance(value, dict):
        return ""
    edits: list[Any] = value["edits"] if isinstance(value.get("edits"), list) else [value]
    added = removed = 0
    for edit in edits:
        if not isinstance(edit, dict):
            continue
        old = edit.get("old_string", edit.get("old_str", edit.get("oldString")))
        new = edit.get("new_string", edit.get("new_str", edit.get("newString")))
        content = edit.get("content")
        if isinstance(new, str):
            added += len(new.splitlines())
            removed += len(old.splitlines()) if isinstance(old, str) else 0
        elif isinstance(content, str):
            added += len(content.splitlines())
    return f"+{added} -{removed}" if added or removed else ""


def _exit_code(output: str) -> int | None:
    match = _EXIT.search(output[:500])
    return int(match.group(1)) if match else None


def _first_line(output: str) -> str:
    """The output's first line that says more than the exit code."""
    for line in output.splitlines():
        if line.strip() and not _EXIT.fullmatch(line.strip()):
            return _clip(line.strip())
    return ""


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _LIMIT else text[: _LIMIT - 1] + "\u2026"
