"""How a task's content changes, as pure functions of the frozen `Task` (TaskRun applies
them): a status with the previous one's message moved to the history, a new turn, an answer,
a steered message. (An agent message and an artifact update: turn/content.py.)"""

from __future__ import annotations

from core.wire.base import utcnow
from core.wire.enums import TaskState
from core.wire.models import (
    Message,
    Metadata,
    StreamResponse,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def with_status(task: Task, status: TaskStatus) -> Task:
    """`task` in `status`; the message of the status it leaves goes to the history."""
    previous = task.status.message
    if previous is None:
        return task.model_copy(update={"status": status})
    return task.model_copy(update={"status": status, "history": [*(task.history or []), previous]})


def status_event(
    task: Task, status: TaskStatus, metadata: Metadata | None = None
) -> StreamResponse:
    """An update of `task` to `status` (`metadata`: the update's own)."""
    return StreamResponse(
        status_update=TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=status, metadata=metadata
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


def with_steered(task: Task, user: Message) -> Task:
    """`task` with `user`'s message, steered into its running turn, in the history."""
    return task.model_copy(update={"history": [*(task.history or []), user]})
