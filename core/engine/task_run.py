"""`TaskRun`: the one state machine of a task while a turn is queued or running, or while
someone watches it.

A run is in one of five states, changed only by its transition methods:

    DONE --admit--> QUEUED --begin--> RUNNING --pause--> PAUSED --resume--> RUNNING
    QUEUED | RUNNING | PAUSED --stop--> STOPPING
    QUEUED | RUNNING | PAUSED | STOPPING --finish--> DONE

DONE is also where a run starts (a new task before its admission, a stored one being watched):
it means no turn is in flight. The task's A2A state changes only through the run's named
outcomes (`work`, `complete`, `fail`, `reject`, `ask`, `ask_auth`, `cancel`, and `admit`,
`pause`, `resume`, `stop`), each checked against `TASK_LEGAL` (run_state.py). Each transition
checks it is legal, then persists, then publishes, so the snapshot, the stored copy and what
subscribers see never disagree; the user's policy hooks run before it (they may rewrite or
drop the update), never inside it. The task is a frozen wire model: every change makes a new
`Task` (task_content.py), so the snapshot is handed out as it is, never copied.

What changes the task without moving its state (a note, an artifact, a queued task's place,
a steered message) is task_notes.py's part of the class, checked against `NOTE_LEGAL`.

The task's `a2aWrapper` section (wrapper_section.py), with the session id, is built here only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import structlog
from pydantic import JsonValue

from core.backend import ApprovalRequest, BackendEvent, Turn, Usage
from core.engine.broker import Subscription, TaskBroker
from core.engine.policy import NO_HOOKS, Hooks
from core.engine.run_state import LEGAL, IllegalTransitionError, RunState, check_task_move
from core.engine.task_content import status_event, with_answer, with_status, with_turn
from core.engine.task_notes import TaskNotes
from core.engine.turn.content import agent_message
from core.engine.wrapper_section import (
    TURN_OUTCOME,
    WRAPPER_METADATA_KEY,
    WrapperSection,
    usage_record,
)
from core.storage.contracts import TaskStore
from core.storage.latch import Latch
from core.storage.queued import Queued
from core.wire.base import utcnow
from core.wire.enums import Role, TaskState
from core.wire.ids import new_id
from core.wire.models import Message, Part, StreamResponse, Task, TaskStatus

log = structlog.get_logger(__name__)

Notify = Callable[["TaskRun", StreamResponse], None]
# The turn's session bookkeeping, queued beside the turn's final write when called (so it
# shares its transaction on a shared SQLite file; core/storage/queued.py), then awaited.
TurnEnd = Callable[[], Queued[None]]


class TaskRun(TaskNotes):
    """A task's live snapshot, its broker and its turn's state. Nothing else assigns these;
    every change is a method here (tests/unit/test_task_run_fields.py enforces it)."""

    __slots__ = (
        "_announced",
        "_broker",
        "_cause",
        "_finished",
        "_hooks",
        "_new_context",
        "_notify",
        "_pending",
        "_principal",
        "_reply",
        "_scope",
        "_section",
        "_settled",
        "_state",
        "_stop_reason",
        "_store",
        "_task",
        "_turn",
        "_turn_end",
    )

    def __init__(
        self,
        principal: str,
        task: Task,
        store: TaskStore,
        *,
        announced: bool = False,
        notify: Notify | None = None,
        new_context: bool = False,
    ) -> None:
        self._principal = principal
        self._new_context = new_context
        self._task = task
        self._store = store
        self._broker = TaskBroker()
        self._notify = notify
        self._state = RunState.DONE
        self._announced = announced
        self._reply: Message | None = None
        # While queued: the scope of the wait for a lane and a slot; while running: the turn's.
        self._scope: anyio.CancelScope | None = None
        self._finished = Latch(is_set=True)
        self._settled = Latch()
        self._stop_reason: str | None = None
        self._hooks: Hooks = NO_HOOKS
        self._turn: Turn | None = None
        self._cause: BackendEvent | None = None
        self._pending: ApprovalRequest | None = None
        self._section = WrapperSection.of(task) or WrapperSection()
        self._turn_end: TurnEnd | None = None

    @classmethod
    def stored(cls, principal: str, task: Task, store: TaskStore, notify: Notify | None) -> TaskRun:
        """A run of a task read from the store (it has been announced already)."""
        return cls(principal, task, store, announced=True, notify=notify)

    @property
    def principal(self) -> str:
        return self._principal

    @property
    def task(self) -> Task:
        """The latest snapshot (frozen: safe to hand out as it is)."""
        return self._task

    @property
    def state(self) -> RunState:
        return self._state

    @property
    def in_flight(self) -> bool:
        return self._state is not RunState.DONE

    @property
    def new_context(self) -> bool:
        """The daemon minted this task's contextId for this turn: no session can be mapped to
        it yet, so there is nothing to look up."""
        return self._new_context

    @property
    def announced(self) -> bool:
        return self._announced

    @property
    def reply(self) -> Message | None:
        """The direct Message a backend answered the first turn with (the task is gone)."""
        return self._reply

    @property
    def session_id(self) -> str | None:
        """The backend session that served this task's latest turn."""
        return self._section.session_id

    @property
    def pending_approval(self) -> ApprovalRequest | None:
        return self._pending

    @property
    def stop_reason(self) -> str | None:
        """Why the turn was stopped (a deadline, shutdown); None for a cancel or no stop."""
        return self._stop_reason

    @property
    def has_subscribers(self) -> bool:
        return self._broker.has_subscribers

    async def finished(self) -> None:
        """Return once no turn is in flight."""
        await self._finished.wait()

    async def settled(self) -> None:
        """Return once the current turn reached what a blocking send returns: a terminal or
        interrupted state, a direct reply, or the turn's end."""
        await self._settled.wait()

    def subscribe(self, *, snapshot: bool) -> Subscription:
        """Subscribe to the task's events; `snapshot` first delivers the Task as it is now
        (taken in the same synchronous step, so no event falls between)."""
        return self._broker.subscribe(StreamResponse(task=self._task) if snapshot else None)

    # ----- transitions -----------------------------------------------------------------------

    def _check(self, transition: str) -> None:
        if self._state not in LEGAL[transition]:
            raise IllegalTransitionError(
                f"{transition} is not allowed in state {self._state.value} (task {self._task.id})"
            )

    def _move(self, transition: str, to: RunState) -> None:
        self._check(transition)
        self._state = to

    async def admit(self, user: Message) -> None:
        """DONE -> QUEUED: a new turn with `user`'s message; the task is SUBMITTED (stored).

        The state changes before the first await, so two concurrent follow-ups cannot both
        continue one task; if the store refuses, the run is DONE again."""
        if self._announced:  # a later turn (a new task is born SUBMITTED)
            check_task_move(self._task.id, self._task.status.state, TaskState.SUBMITTED)
        self._move("admit", RunState.QUEUED)
        before = self._task
        self._finished = Latch()
        self._settled = Latch()
        self._stop_reason = None
        self._task = with_turn(before, user)
        try:
            await self._store.save(self._principal, self._task)
        except BaseException:
            self._task, self._state = before, RunState.DONE
            self._finished.set()
            raise

    def hold(self, scope: anyio.CancelScope) -> None:
        """QUEUED: `scope` is the wait for a lane and a slot; a stop cancels it."""
        if self._state is RunState.QUEUED:
            self._scope = scope

    def begin(self, scope: anyio.CancelScope, hooks: Hooks, turn: Turn) -> None:
        """QUEUED -> RUNNING: the turn runs under `scope` (a stop cancels it)."""
        self._move("begin", RunState.RUNNING)
        self._scope, self._hooks, self._turn, self._cause = scope, hooks, turn, None

    def lease(
        self,
        turn: Turn,
        *,
        backend: str,
        new_session: bool,
        expired_session: bool,
        resume_command: str | None,
        on_end: TurnEnd | None,
    ) -> None:
        """The turn's session is resolved: `turn` now names it; `on_end` is the session
        bookkeeping written with the turn's final state."""
        self._turn, self._turn_end = turn, on_end
        self._set_section(
            backend=backend,
            leased=True,
            session_id=turn.session_id,
            resume_command=resume_command,
            new_session=new_session,
            expired_session=expired_session,
            queue=None,
            **TURN_OUTCOME,
        )

    def prepared(self, turn: Turn) -> None:
        """The turn as the backend runs it (in its context's workspace)."""
        self._turn = turn

    @property
    def turn(self) -> Turn | None:
        """The turn in flight, as the backend runs it (None: none)."""
        return self._turn

    def applying(self, event: BackendEvent | None) -> None:
        """The backend event being applied (for the afterEvent hook)."""
        self._cause = event

    async def pause(self, approval: ApprovalRequest, question: list[Part]) -> None:
        """RUNNING -> PAUSED: the agent waits on `approval`; the task is INPUT_REQUIRED."""
        self._check("pause")
        check_task_move(self._task.id, self._task.status.state, TaskState.INPUT_REQUIRED)
        self.announce()
        event = await self._hooked(TaskState.INPUT_REQUIRED, agent_message(self._task, question))
        self._move("pause", RunState.PAUSED)
        self._pending = approval
        if event is not None:
            await self._change_status(event)

    async def resume(self, user: Message) -> None:
        """PAUSED -> RUNNING: the question and `user`'s answer go to the history, and the task
        is WORKING again."""
        self._move("resume", RunState.RUNNING)
        self._pending = None
        self._settled = Latch()
        self._task = with_answer(self._task, user)
        await self._set_status(TaskState.WORKING)

    def release_approval(self) -> ApprovalRequest | None:
        """The turn is ending: the approval it still waits on, if any (to be denied)."""
        pending, self._pending = self._pending, None
        return pending

    async def stop(self, reason: str | None) -> None:
        """-> STOPPING: a cancel (`reason` None) or a stop for `reason` (a deadline, shutdown).
        A queued turn never starts: its task ends now (CANCELED, or FAILED with the reason).
        A running one is cancelled; its driver stops the agent and ends the task."""
        was = self._state
        self._move("stop", RunState.STOPPING)
        if self._stop_reason is None:
            self._stop_reason = reason
        if was is RunState.QUEUED and not self._task.status.state.terminal:
            self._set_section(queue=None)
            if reason is None:
                await self.cancel()
            else:
                await self.fail(agent_message(self._task, [Part(text=reason)]))
        if self._scope is not None:
            self._scope.cancel()

    def finish(self) -> None:
        """-> DONE: no turn in flight any more. Streams end if the task is over."""
        self._move("finish", RunState.DONE)
        self._new_context = False
        self._scope, self._turn, self._cause, self._pending = None, None, None, None
        self._turn_end = None
        self._finished.set()
        self._settled.set()
        if self._task.status.state.terminal or self._reply is not None:
            self._broker.close()

    async def cancel_idle(self) -> None:
        """A task with no turn in flight (waiting for input) is canceled directly."""
        if self._state is not RunState.DONE:
            raise IllegalTransitionError(f"cancel_idle in state {self._state.value}")
        await self.cancel()

    def end_streams(self) -> None:
        """Shutdown: end every stream and blocking wait on this task after what was sent."""
        self._settled.set()
        self._broker.close()

    # ----- the task's content ----------------------------------------------------------------

    def _became(self, task: Task) -> None:
        """The task's new content (task_notes.py); its state is the one it had."""
        self._task = task

    def _set_section(self, **changes: Any) -> None:
        if changes:
            self._section = self._section.evolve(**changes)
        metadata = dict(self._task.metadata or {})
        metadata[WRAPPER_METADATA_KEY] = self._section.render()
        self._task = self._task.model_copy(update={"metadata": metadata})

    def bind_session(self, session_id: str, resume_command: str | None) -> None:
        """The backend named the session serving the task (WrapperSection.bound)."""
        self._section = self._section.bound(session_id, resume_command)
        self._set_section()

    def record_usage(self, usage: Usage) -> None:
        self._set_section(usage=usage_record(usage))

    def record_sections(self, sections: Mapping[str, Any]) -> None:
        """`workspace` (turn hooks), TURN_OUTCOME's keys (the turn runner), and what the
        turn's admission says: `options`, `forked_from`, `queue`."""
        known = {*TURN_OUTCOME, "workspace", "options", "forked_from", "queue"}
        self._set_section(**{k: v for k, v in sections.items() if k in known})

    def record_approval(self, decision: Mapping[str, JsonValue]) -> None:
        self._set_section(approvals=(*self._section.approvals, decision))

    def _publish(self, event: StreamResponse) -> None:
        """Hand an event to the task's subscribers, then to `notify`. Never waits."""
        self._broker.publish(event)
        if self._notify is not None:
            self._notify(self, event)

    def announce(self) -> None:
        """Make the task visible to stream subscribers (first event: the Task snapshot)."""
        if not self._announced:
            self._announced = True
            self._publish(StreamResponse(task=self._task))

    async def _outgoing(self, event: StreamResponse) -> StreamResponse | None:
        """The event after the afterEvent hook (None: dropped); unchanged outside a turn."""
        if self._turn is None:
            return event
        return await self._hooks.outgoing(self._turn, self._cause, event)

    async def _persist(self, final: bool) -> None:
        """Store the snapshot; a turn's final state goes with its session bookkeeping, in the
        same transaction when both live in one SQLite file."""
        turn_end, self._turn_end = (self._turn_end, None) if final else (None, self._turn_end)
        # Both writes are queued before either is awaited (core/storage/queued.py): one batch.
        saved = self._store.save(self._principal, self._task)
        ended = turn_end() if turn_end is not None else None
        try:
            await saved
        finally:
            if ended is not None:
                await ended

    # ----- the task's outcomes (its A2A state, checked against TASK_LEGAL) ----------------------

    async def work(self) -> None:
        """The agent is at it: WORKING."""
        await self._set_status(TaskState.WORKING)

    async def complete(self, message: Message | None = None) -> None:
        """The agent answered (`message`): COMPLETED."""
        await self._set_status(TaskState.COMPLETED, message)

    async def fail(self, message: Message) -> None:
        """The turn failed (`message` says why, for the caller): FAILED."""
        await self._set_status(TaskState.FAILED, message)

    async def reject(self, message: Message) -> None:
        """The turn is refused (a policy hook, the provider): REJECTED."""
        await self._set_status(TaskState.REJECTED, message)

    async def ask(self, message: Message | None) -> None:
        """The agent needs the caller's input (`message` its question): INPUT_REQUIRED."""
        await self._set_status(TaskState.INPUT_REQUIRED, message)

    async def ask_auth(self, message: Message | None) -> None:
        """The agent needs credentials (`message` says which, and the fix): AUTH_REQUIRED."""
        await self._set_status(TaskState.AUTH_REQUIRED, message)

    async def cancel(self, message: Message | None = None) -> None:
        """The task is canceled (`message`: what the caller should know): CANCELED."""
        await self._set_status(TaskState.CANCELED, message)

    async def _set_status(self, state: TaskState, message: Message | None = None) -> None:
        """Move the task to `state`: the policy hooks first, then the transition."""
        check_task_move(self._task.id, self._task.status.state, state)
        self.announce()
        event = await self._hooked(state, message)
        if event is not None:
            await self._change_status(event)

    async def _hooked(self, state: TaskState, message: Message | None) -> StreamResponse | None:
        """The update to `state` as the policy hooks leave it (None: dropped): before the
        transition, never inside it."""
        status = TaskStatus(state=state, message=message, timestamp=utcnow())
        if self._turn is None:
            return status_event(self._task, status)
        return await self._hooks.status_update(self._turn, self._cause, self._task, status)

    async def _change_status(self, event: StreamResponse) -> None:
        """The transition: checked, then stored, then published (no user code runs here)."""
        if event.status_update is None:
            raise IllegalTransitionError("a status transition needs a status update")
        status = event.status_update.status
        task = self._task
        check_task_move(task.id, task.status.state, status.state)
        final = status.state.terminal or status.state.interrupted
        self._task = with_status(task, status)
        log.info(
            "task.state", task_id=task.id, context_id=task.context_id, state=status.state.value
        )
        # Persist before anyone hears of it: a client never sees a state the store lacks.
        await self._persist(final=self._turn is not None and final)
        self._publish(event)
        if final:
            self._settled.set()
        if status.state.terminal:
            self._broker.close()

    async def reply_directly(self, parts: list[Part]) -> None:
        """The backend answered the first turn with a Message: no task remains (it is deleted
        before anyone sees the reply)."""
        task = self._task
        self._reply = Message(
            message_id=new_id(), context_id=task.context_id, role=Role.AGENT, parts=parts
        )
        turn_end, self._turn_end = self._turn_end, None
        await self._store.delete(self._principal, task.id)
        if turn_end is not None:
            await turn_end()
        self._publish(StreamResponse(message=self._reply))
        self._settled.set()
        self._broker.close()
