"""How a task's content changes, as pure functions of the frozen `Task` (TaskRun applies
them): an agent message, a status with the previous one's message moved to the history, an
artifact update merged into the task's artifacts."""

from __future__ import annotations

from core.engine.turn.content import joined_text
from core.wire.base import utcnow
from core.wire.enums import Role, TaskState
from core.wire.ids import new_id
from core.wire.models import (
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def agent_message(task: Task, parts: list[Part]) -> Message:
    return Message(
        message_id=new_id(),
        context_id=task.context_id,
        task_id=task.id,
        role=Role.AGENT,
        parts=parts,
    )


def with_status(task: Task, status: TaskStatus) -> Task:
    """`task` in `status`; the message of the status it leaves goes to the history."""
    previous = task.status.message
    if previous is None:
        return task.model_copy(update={"status": status})
    return task.model_copy(update={"status": status, "history": [*(task.history or []), previous]})


def with_artifact(task: Task, update: TaskArtifactUpdateEvent) -> Task:
    """`task` with the artifact update applied: a new artifact, a replaced one, or a chunk
    appended (the stream carries each chunk; the stored task holds the text whole once the
    last chunk is in)."""
    artifacts = list(task.artifacts or [])
    existing = next(
        (i for i, a in enumerate(artifacts) if a.artifact_id == update.artifact.artifact_id),
        None,
    )
    if update.append and existing is not None:
        parts = [*artifacts[existing].parts, *update.artifact.parts]
        parts = joined_text(parts) if update.last_chunk else parts
        artifacts[existing] = artifacts[existing].model_copy(update={"parts": parts})
    elif existing is not None:
        artifacts[existing] = update.artifact
    else:
        artifacts.append(update.artifact)
    return task.model_copy(update={"artifacts": artifacts})


def status_event(task: Task, status: TaskStatus) -> StreamResponse:
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=status
        )
    )


def with_turn(task: Task, user: Message) -> Task:
    """`task` SUBMITTED again for a new turn with `user`'s message (the last status's
    message, the agent's question, goes to the history before it)."""
    previous = task.status.message
    return task.model_copy(
        update={
            "history": [*(task.history or []), *([previous] if previous else []), user],
            "status": TaskStatus(state=TaskState.SUBMITTED, timestamp=utcnow()),
        }
    )


def with_answer(task: Task, user: Message) -> Task:
    """`task` with the question its paused turn asked and `user`'s answer in the history."""
    question = task.status.message
    return task.model_copy(
        update={
            "history": [*(task.history or []), *([question] if question else []), user],
            "status": task.status.model_copy(update={"message": None}),
        }
    )
