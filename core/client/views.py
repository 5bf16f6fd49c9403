"""What the client shows of the SDK's wire types: tasks, questions, answers and changes, as
plain frozen values (the SDK's protobuf messages stay behind this module)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from a2a.types import Artifact, Message, Part, Role, StreamResponse, Task, TaskState
from google.protobuf.json_format import MessageToDict

CHANGES_ARTIFACT = "changes"
PATCH_NAME = "changes.patch"
APPROVAL_TYPE = "a2a-wrapper/approval-request"
PROGRESS_TYPE = "a2a-wrapper/progress"

TERMINAL = frozenset({"completed", "failed", "canceled", "rejected"})
WAITING = frozenset({"input-required", "auth-required"})
STATES = (
    "submitted",
    "working",
    "completed",
    "failed",
    "canceled",
    "input-required",
    "rejected",
    "auth-required",
)


def state_name(state: int) -> str:
    """`TASK_STATE_INPUT_REQUIRED` -> `input-required` (the names people type)."""
    name = TaskState.Name(state) if state in TaskState.values() else "TASK_STATE_UNSPECIFIED"
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def state_value(name: str) -> int:
    """The inverse of `state_name`; ValueError for a name that is no state."""
    if name not in STATES:
        raise ValueError(f"unknown state {name!r}; one of {', '.join(STATES)}")
    return int(TaskState.Value("TASK_STATE_" + name.upper().replace("-", "_")))


def texts(parts: Any) -> str:
    return "".join(p.text for p in parts if p.WhichOneof("content") == "text")


def data_parts(parts: Any) -> list[dict[str, Any]]:
    found = []
    for part in parts:
        if part.WhichOneof("content") == "data":
            value = MessageToDict(part.data)
            if isinstance(value, dict):
                found.append(value)
    return found


@dataclass(frozen=True)
class Question:
    """What an input-required (or auth-required) task asks, in words and, for an approval of
    our daemon, the structured request (tool, summary, options)."""

    text: str
    approval: dict[str, Any] | None = None

    def for_a_model(self, task_id: str) -> str:
        """The question as a calling model can act on it: what is asked, and how to answer."""
        lines = [self.text or "The agent needs input to continue."]
        if self.approval:
            options = ", ".join(self.approval.get("options") or ["approve", "deny"])
            lines.append(
                f"This is a permission request ({self.approval.get('kind', 'tool')}: "
                f"{self.approval.get('summary', '')}). Answer it with the `answer` tool, "
                f"task_id {task_id!r}, reply one of: {options} (or any text to deny with a "
                "reason)."
            )
        else:
            lines.append(f"Answer it with the `answer` tool, task_id {task_id!r}, in words.")
        return "\n".join(lines)


@dataclass(frozen=True)
class Changes:
    """The `changes` artifact of a turn (our daemon's workspaces; docs/configuration.md)."""

    patch: str
    scope: str = "turn"
    files: tuple[dict[str, Any], ...] = ()
    base: str | None = None
    head: str | None = None

    def summary(self) -> str:
        if not self.files:
            return f"{self.scope} changes"
        items = []
        for f in self.files:
            lines = ""
            if f.get("additions") is not None:
                # JSON numbers come back from protobuf's Struct as floats.
                lines = f" +{int(f['additions'])} -{int(f.get('deletions') or 0)}"
            items.append(f"{f.get('status', 'changed')} {f.get('path')}{lines}")
        return f"{self.scope} changes: " + ", ".join(items)

    def as_dict(self) -> dict[str, Any]:
        return {
            "scope": self.scope,
            "base": self.base,
            "head": self.head,
            "files": list(self.files),
            "patch": self.patch,
        }


@dataclass(frozen=True)
class TaskView:
    id: str
    context_id: str
    state: str
    status_text: str = ""
    answer: str = ""
    question: Question | None = None
    changes: Changes | None = None
    updated: str = ""
    raw: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL

    @property
    def waiting(self) -> bool:
        return self.state in WAITING

    def as_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "id": self.id,
            "contextId": self.context_id,
            "state": self.state,
            "answer": self.answer,
        }
        if self.status_text:
            body["statusText"] = self.status_text
        if self.question is not None:
            body["question"] = {"text": self.question.text, "approval": self.question.approval}
        if self.changes is not None:
            body["changes"] = {k: v for k, v in self.changes.as_dict().items() if k != "patch"}
        return body


def changes_of(artifacts: Any) -> Changes | None:
    """The last `changes` artifact among `artifacts` (None when the turn changed nothing)."""
    found = None
    for artifact in artifacts:
        if artifact.name == CHANGES_ARTIFACT:
            found = _changes(artifact)
    return found


def _changes(artifact: Artifact) -> Changes | None:
    patch: str | None = None
    info: dict[str, Any] = {}
    for part in artifact.parts:
        kind = part.WhichOneof("content")
        if kind == "raw" and (part.filename == PATCH_NAME or "diff" in part.media_type):
            patch = part.raw.decode("utf-8", "replace")
        elif kind == "text" and part.filename == PATCH_NAME:
            patch = part.text
        elif kind == "data":
            value = MessageToDict(part.data)
            info = value if isinstance(value, dict) else {}
    if patch is None:
        return None
    return Changes(
        patch=patch,
        scope=str(info.get("scope", "turn")),
        files=tuple(info.get("files") or ()),
        base=info.get("base"),
        head=info.get("head"),
    )


def answer_of(task: Task) -> str:
    """The text of the task's artifacts other than `changes` (the agent's answer)."""
    return "".join(texts(a.parts) for a in task.artifacts if a.name != CHANGES_ARTIFACT)


def question_of(message: Message) -> Question:
    approval = next((d for d in data_parts(message.parts) if d.get("type") == APPROVAL_TYPE), None)
    return Question(texts(message.parts), approval)


def view(task: Task) -> TaskView:
    state = state_name(task.status.state)
    message = task.status.message
    status_text = texts(message.parts)
    updated = task.status.timestamp.ToJsonString() if task.status.HasField("timestamp") else ""
    return TaskView(
        id=task.id,
        context_id=task.context_id,
        state=state,
        status_text=status_text,
        answer=answer_of(task),
        question=question_of(message) if state in WAITING else None,
        changes=changes_of(task.artifacts),
        updated=updated,
        raw=MessageToDict(task),
    )


def transcript_of(task: Task) -> str:
    """A task's messages, answer and state as text (the MCP transcript resource)."""
    lines = [f"task {task.id} (context {task.context_id}): {state_name(task.status.state)}"]
    for message in task.history:
        who = "user" if message.role == Role.ROLE_USER else "agent"
        text = texts(message.parts)
        if text:
            lines.append(f"{who}: {text}")
    answer = answer_of(task)
    if answer:
        lines.append(f"answer: {answer}")
    status = texts(task.status.message.parts)
    if status and status != answer:
        lines.append(f"status: {status}")
    return "\n".join(lines)


def message_view(message: Message) -> TaskView:
    """A direct reply (a Message, no task) as a completed pseudo-task."""
    return TaskView(
        id=message.task_id,
        context_id=message.context_id,
        state="completed",
        answer=texts(message.parts),
        raw=MessageToDict(message),
    )


@dataclass(frozen=True)
class Update:
    """One streamed event as the client shows it: progress, a piece of the answer, a state."""

    kind: str  # "progress", "text", "state"
    text: str
    state: str = ""
    data: dict[str, Any] | None = None
    task_id: str = ""


def updates_of(event: StreamResponse) -> list[Update]:
    """What a streamed event says worth showing (nothing for the initial task snapshot)."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        task = event.task
        return [Update("state", "", state_name(task.status.state), task_id=task.id)]
    if kind == "status_update":
        status, task_id = event.status_update.status, event.status_update.task_id
        state = state_name(status.state)
        text = texts(status.message.parts)
        if state == "working":
            progress = next(
                (d for d in data_parts(status.message.parts) if d.get("type") == PROGRESS_TYPE),
                None,
            )
            return [Update("progress", text, state, progress, task_id)] if text else []
        return [Update("state", text, state, task_id=task_id)]
    if kind == "artifact_update":
        artifact, task_id = event.artifact_update.artifact, event.artifact_update.task_id
        if artifact.name == CHANGES_ARTIFACT:
            change = _changes(artifact)
            summary = change.summary() if change else ""
            return [Update("progress", summary, "working", task_id=task_id)] if summary else []
        text = texts(artifact.parts)
        return [Update("text", text, task_id=task_id)] if text else []
    return []


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def user_part_text(text: str) -> Part:
    return Part(text=text)
