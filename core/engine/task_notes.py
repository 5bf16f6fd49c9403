"""What a run tells about its task without moving its A2A state: a WORKING note (a tool step,
progress), an artifact, a queued task's new place in its context's queue, a message steered
into the running turn. Part of `TaskRun` (task_run.py), by what it does: the notes that are
stored are checked against `NOTE_LEGAL` (run_state.py) like the named outcomes against
`TASK_LEGAL`, and the policy hooks see their events before anything changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from core.engine.run_state import NOTE_LEGAL, IllegalTransitionError, RunState
from core.engine.task_content import status_event, with_steered
from core.engine.turn.content import agent_message, with_artifact
from core.engine.wrapper_section import WRAPPER_METADATA_KEY, WrapperSection
from core.wire.base import utcnow
from core.wire.enums import TaskState
from core.wire.models import (
    Artifact,
    Message,
    Metadata,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
)


class TaskNotes:
    """TaskRun's notes. Its fields, and every write of them, are task_run.py's: a note
    computes the task's new content and hands it over (`_became`)."""

    __slots__ = ()

    if TYPE_CHECKING:
        _announced: bool
        _section: WrapperSection
        _state: RunState
        _task: Task

        def announce(self) -> None: ...

        def _publish(self, event: StreamResponse) -> None: ...

        async def _outgoing(self, event: StreamResponse) -> StreamResponse | None: ...

        async def _persist(self, final: bool) -> None: ...

        def _set_section(self, **changes: Any) -> None: ...

        def _became(self, task: Task) -> None: ...

        async def work(self) -> None: ...

    def _check_note(self, note: str) -> None:
        runs, states = NOTE_LEGAL[note]
        state = self._task.status.state
        if self._state not in runs or state not in states:
            raise IllegalTransitionError(
                f"{note} is not allowed in state {self._state.value} of a task"
                f" {state.value} (task {self._task.id})"
            )

    async def progress(
        self, text: str, data: dict[str, Any] | None = None, metadata: Metadata | None = None
    ) -> None:
        """A WORKING update with a note (a tool step's facts as a data part; `metadata`: the
        message's); never stored."""
        self.announce()
        facts = [Part(data=data, media_type="application/json")] if data else []
        message = agent_message(self._task, [Part(text=text), *facts])
        message = message.model_copy(update={"metadata": metadata}) if metadata else message
        status = TaskStatus(state=TaskState.WORKING, message=message, timestamp=utcnow())
        event = await self._outgoing(status_event(self._task, status))
        if event is not None:
            self._publish(event)

    async def add_artifact(self, artifact: Artifact, *, append: bool, last_chunk: bool) -> None:
        self.announce()
        task = self._task
        event = await self._outgoing(
            StreamResponse(
                artifact_update=TaskArtifactUpdateEvent(
                    task_id=task.id,
                    context_id=task.context_id,
                    artifact=artifact,
                    append=append or None,
                    last_chunk=last_chunk or None,
                )
            )
        )
        if event is None or event.artifact_update is None:
            return
        artifacts = with_artifact(self._task.artifacts or [], event.artifact_update)
        self._became(self._task.model_copy(update={"artifacts": artifacts}))
        self._publish(event)

    async def requeue(self, queue: dict[str, JsonValue] | None) -> None:
        """QUEUED, SUBMITTED: the task's new place in its context's queue (None: it is next),
        stored in its `a2aWrapper.queue`; an update of its unchanged status carries it. No
        change, no note."""
        self._check_note("requeue")
        if queue == self._section.queue:
            return
        self._set_section(queue=queue)
        await self._persist(final=False)
        if self._announced:
            moved: Metadata = {WRAPPER_METADATA_KEY: {"queue": queue}}
            self._publish(status_event(self._task, self._task.status, moved))

    async def steered(self, user: Message, note: str) -> None:
        """RUNNING, WORKING: `user`'s message went into the running turn. It joins the task's
        history (stored), and a WORKING update with `note` says it was steered; the task stays
        WORKING (a turn whose agent has not said anything yet starts working first)."""
        if self._state is RunState.RUNNING and self._task.status.state is TaskState.SUBMITTED:
            await self.work()
        self._check_note("steer")
        marked: Metadata = {WRAPPER_METADATA_KEY: {"steered": user.message_id}}
        message = agent_message(self._task, [Part(text=note)])
        status = TaskStatus(
            state=TaskState.WORKING,
            message=message.model_copy(update={"metadata": marked}),
            timestamp=utcnow(),
        )
        # The hooks see the update before the task changes (they may drop it, not the note);
        # the turn may have ended while they ran.
        event = await self._outgoing(status_event(self._task, status))
        self._check_note("steer")
        self._became(with_steered(self._task, user))
        await self._persist(final=False)
        if event is not None:
            self._publish(event)
