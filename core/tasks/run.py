"""The live state of one task while a turn is queued or running, or while someone watches it.

A `TaskRun` owns the task's latest snapshot and its broker. Every change goes through it, so
the snapshot, the persisted copy and what subscribers see never disagree.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import structlog

from core.backend import ApprovalRequest, BackendEvent, Turn
from core.tasks.broker import TaskBroker
from core.tasks.hooks import NO_HOOKS, Hooks
from core.tasks.store import TaskStore
from core.wire.base import utcnow
from core.wire.enums import Role, TaskState
from core.wire.models import (
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)

log = structlog.get_logger(__name__)


def agent_message(task: Task, parts: list[Part]) -> Message:
    return Message(
        message_id=str(uuid.uuid4()),
        context_id=task.context_id,
        task_id=task.id,
        role=Role.AGENT,
        parts=parts,
    )


@dataclass(eq=False)
class TaskRun:
    principal: str
    task: Task
    store: TaskStore
    broker: TaskBroker = field(default_factory=TaskBroker)
    announced: bool = False
    running: bool = False
    first_turn: bool = True
    reply: Message | None = None
    scope: anyio.CancelScope | None = None
    # While the turn waits for its lane or a turn slot: cancelling it gives the place back.
    queued_scope: anyio.CancelScope | None = None
    finished: anyio.Event = field(default_factory=anyio.Event)
    stop_reason: str | None = None
    # The turn being run and the backend event being applied, for the policy hooks.
    hooks: Hooks = NO_HOOKS
    # The agent's permission request the task waits on (INPUT_REQUIRED, turn paused).
    pending_approval: ApprovalRequest | None = None
    turn: Turn | None = None
    cause: BackendEvent | None = None
    # Told of every event after the broker (push notifications); must not block.
    notify: Callable[[TaskRun, StreamResponse], None] | None = None

    def publish(self, event: StreamResponse) -> None:
        """Hand an event to the task's subscribers, then to `notify`. Never waits."""
        self.broker.publish(event)
        if self.notify is not None:
            self.notify(self, event)

    def snapshot(self) -> Task:
        return self.task.model_copy(deep=True)

    def announce(self) -> None:
        """Make the task visible to stream subscribers (first event: the Task snapshot)."""
        if not self.announced:
            self.announced = True
            self.publish(StreamResponse(task=self.snapshot()))

    async def _outgoing(self, event: StreamResponse) -> StreamResponse | None:
        """The event after the afterEvent hook (None: dropped); unchanged outside a turn."""
        if self.turn is None:
            return event
        return await self.hooks.outgoing(self.turn, self.cause, event)

    async def set_status(self, state: TaskState, message: Message | None = None) -> None:
        """Move the task to `state`: hooks first, then stored, then published."""
        self.announce()
        status = TaskStatus(state=state, message=message, timestamp=utcnow())
        if self.turn is not None and (state.terminal or state.interrupted):
            status = await self.hooks.final_status(self.turn, status)
        event = await self._outgoing(
            StreamResponse(
                status_update=TaskStatusUpdateEvent(
                    task_id=self.task.id, context_id=self.task.context_id, status=status
                )
            )
        )
        if event is None or event.status_update is None:
            return
        status = event.status_update.status
        previous = self.task.status
        if previous.message is not None:
            self.task.history = [*(self.task.history or []), previous.message]
        self.task.status = status
        log.info(
            "task.state",
            task_id=self.task.id,
            context_id=self.task.context_id,
            state=status.state.value,
        )
        # Persist before anyone hears of it: a client never sees a state the store lacks.
        await self.store.save(self.principal, self.task)
        self.publish(event.model_copy(deep=True))
        if status.state.terminal:
            self.broker.close()

    async def resume_after_input(self, user: Message) -> None:
        """The caller answered the question of this paused turn: the question and the answer go
        to the history, and the task is WORKING again."""
        question = self.task.status.message
        self.task.history = [*(self.task.history or []), *([question] if question else []), user]
        self.task.status = self.task.status.model_copy(update={"message": None})
        await self.set_status(TaskState.WORKING)

    async def progress(self, text: str) -> None:
        """A WORKING update carrying a note; published, never stored."""
        self.announce()
        status = TaskStatus(
            state=TaskState.WORKING,
            message=agent_message(self.task, [Part(text=text)]),
            timestamp=utcnow(),
        )
        event = await self._outgoing(
            StreamResponse(
                status_update=TaskStatusUpdateEvent(
                    task_id=self.task.id, context_id=self.task.context_id, status=status
                )
            )
        )
        if event is not None:
            self.publish(event)

    async def add_artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> None:
        self.announce()
        event = await self._outgoing(
            StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id=self.task.id,
                    context_id=self.task.context_id,
                    artifact=artifact,
                    append=append or None,
                    last_chunk=last_chunk or None,
                )
            )
        )
        if event is None or event.artifact_update is None:
            return
        update = event.artifact_update
        artifacts = list(self.task.artifacts or [])
        existing = next(
            (i for i, a in enumerate(artifacts) if a.artifact_id == update.artifact.artifact_id),
            None,
        )
        if update.append and existing is not None:
            merged = artifacts[existing].model_copy(deep=True)
            merged.parts = [*merged.parts, *update.artifact.parts]
            artifacts[existing] = merged
        elif existing is not None:
            artifacts[existing] = update.artifact
        else:
            artifacts.append(update.artifact)
        self.task.artifacts = artifacts
        self.publish(event)
