"""Admission: whether a message may start a turn, and of which task.

Rules (A2A v1.0 §3.1, §3.4; a2a-protocol.md §8): server-made task ids; contextId inferred from
the task and checked against it; INPUT_REQUIRED/AUTH_REQUIRED tasks continue with the same id;
terminal tasks are immutable; a message answering a paused turn's approval resumes that turn.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from core.backend import NO_OPTIONS, TurnOptions
from core.backend.control import Capabilities, options_record
from core.engine.config import Limits
from core.engine.control.forking import Forks
from core.engine.control.requested import NO_CONTROL, Control, TurnSetup, turn_options
from core.engine.lanes import Lane
from core.engine.limits import TurnPlaces, check_message
from core.engine.queries import LiveRuns, TaskQueries
from core.engine.run_state import RunState
from core.engine.task_run import TaskRun
from core.engine.turn.approvals import answer_of
from core.engine.turn.plugins import NO_BUDGET, NO_TURN_HOOKS, TaskPush, TurnBudget, TurnHooks
from core.storage.contracts import PushVersion, StoredConfig
from core.wire.base import utcnow
from core.wire.enums import TaskState
from core.wire.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    UnsupportedOperationError,
)
from core.wire.ids import new_id
from core.wire.models import Message, SendMessageRequest, Task, TaskStatus

SHUTTING_DOWN = "The daemon is shutting down; send this again later"


def _context_mismatch(message: Message, task: Task) -> InvalidParamsError:
    return InvalidParamsError(
        f"Context {message.context_id} does not match context {task.context_id} of task {task.id}",
        violations=[("message.contextId", "does not match the task's context")],
    )


@dataclass(frozen=True, slots=True)
class NewTurn:
    """A new turn the engine admitted and has not started: its run (the task stored
    SUBMITTED), its place in the context's lane, and what it runs with (its options, the
    session it forks)."""

    run: TaskRun
    lane: Lane
    setup: TurnSetup

    @property
    def task(self) -> Task:
        return self.run.task

    @property
    def announced(self) -> bool:
        """Its task has been shown to watchers already (a later turn of it)."""
        return self.run.announced


@dataclass(frozen=True, slots=True)
class Answer:
    """A message answering the approval a paused turn waits on: the turn, resumed, and the
    call that hands the answer to the agent (made once the caller watches)."""

    run: TaskRun
    give: Callable[[], None]


@dataclass(frozen=True, slots=True)
class Steer:
    """A message for the running turn of a task (`delivery: "steer"`): the run, checked to
    be steerable, and the message, handed to the agent once the caller watches."""

    run: TaskRun
    message: Message


Admitted = NewTurn | Answer | Steer
"""A message the engine took and has not answered yet."""


class Admission:
    def __init__(
        self,
        limits: Limits,
        live: LiveRuns,
        *,
        queries: TaskQueries,
        push: TaskPush | None,
        draining: Callable[[], bool],
        budget: TurnBudget = NO_BUDGET,
        places: TurnPlaces,
        plugin: TurnHooks = NO_TURN_HOOKS,
        forks: Forks,
        capabilities: Callable[[], Capabilities],
        defaults: TurnOptions = NO_OPTIONS,
    ) -> None:
        """`capabilities`: what callers may choose now; `defaults`: the options of a turn
        that chooses none (turnOptions)."""
        self._forks = forks
        self._capabilities = capabilities
        self._defaults = defaults
        self._limits = limits
        self.budget = budget
        self._plugin = plugin
        self._live = live
        self._queries = queries
        self._push = push
        self._draining = draining
        self.lanes, self.slots = places.lanes, places.slots

    async def approval_answer(
        self, principal: str, message: Message
    ) -> tuple[TaskRun, Callable[[], None]] | None:
        """When `message` answers the approval a paused turn waits on: resume the task (it is
        WORKING again, the answer in its history) and return it with the call that hands the
        answer to the agent (made once the caller watches, so no event is missed)."""
        run = self._live.get(principal, message.task_id)
        if run is None or run.state is not RunState.PAUSED:
            return None
        pending = run.pending_approval
        if pending is None:
            return None
        if message.context_id and message.context_id != run.task.context_id:
            raise _context_mismatch(message, run.task)
        answer = answer_of(message)
        await run.resume(message.model_copy(update={"context_id": run.task.context_id}))
        return run, lambda: pending.reply.answer(answer)

    async def admit(
        self,
        principal: str,
        request: SendMessageRequest,
        version: PushVersion,
        control: Control = NO_CONTROL,
    ) -> tuple[TaskRun, Lane, TurnSetup]:
        """Validate, reserve what the turn may spend (the budgets), take a place in the
        context's lane and a turn slot, then persist the SUBMITTED task (and the inline push
        config, before any event of the task exists). The scheduler gives the reservation back
        when the turn is over, whether it ran or not.

        Everything between the checks and the run's admission is synchronous, so two
        concurrent follow-ups cannot both continue one task; a full lane refuses the message
        before anything is stored. `control`: the request's conversation control (its options
        checked against what callers may choose, its fork against the source)."""
        if self._draining():
            raise UnsupportedOperationError(SHUTTING_DOWN)
        message = request.message
        check_message(
            message, max_parts=self._limits.max_parts, max_file_bytes=self._limits.max_file_bytes
        )
        self._plugin.check_message(message)
        options = turn_options(control, self._capabilities(), self._defaults)
        fork = await self._forks.fork(principal, message, control)
        inline = (
            request.configuration.task_push_notification_config
            if request.configuration is not None
            else None
        )
        if inline is not None:
            field = "configuration." + (
                "taskPushNotificationConfig" if version == "1.0" else "pushNotificationConfig"
            )
            if self._push is None:
                raise PushNotificationNotSupportedError
            await self._push.vet(inline, field)
        run, user = await self._reserved_run(principal, message, control)
        task_id = run.task.id
        context_id = run.task.context_id
        try:
            lane = self.lanes.reserve(principal, context_id, task_id)
        except BaseException:
            self.budget.unreserve(task_id)
            raise
        try:
            self.slots.admit()
        except BaseException:
            self.lanes.leave(principal, context_id, lane, task_id)
            self.budget.unreserve(task_id)
            raise
        self._live.hold(run)
        setup = TurnSetup(options, *((fork.source, fork.session_id) if fork else (None, None)))
        run.record_sections(_sections(setup, lane.queue_of(task_id)))
        try:
            await run.admit(user)
            if inline is not None and self._push is not None:
                config = inline.model_copy(update={"task_id": task_id, "id": inline.id or task_id})
                await self._push.put(StoredConfig(principal, version, config))
        except BaseException:
            self.lanes.leave(principal, context_id, lane, task_id)
            self.slots.withdraw()
            self.budget.unreserve(task_id)
            if run.in_flight:
                run.finish()
            self._live.release(run)
            raise
        return run, lane, setup

    async def _reserved_run(
        self, principal: str, message: Message, control: Control
    ) -> tuple[TaskRun, Message]:
        """The run the message starts a turn of (its task continued, or a new one) and the
        user message as stored, with what the turn may spend reserved; nothing after the
        reservation awaits, so no other admission runs between the check and the hold.
        With `delivery: "queue"`, the id of a task whose turn is in flight queues a new task
        in its context."""
        if message.task_id:
            task = await self._queries.load(principal, message.task_id)
            running = self._live.get(principal, task.id)
            if control.delivery == "queue" and running is not None and running.in_flight:
                if message.context_id and message.context_id != task.context_id:
                    raise _context_mismatch(message, task)
                message = message.model_copy(
                    update={"task_id": None, "context_id": task.context_id}
                )
        if message.task_id:
            # Only once the task may continue: a turn of it still in flight keeps its own
            # reservation (reservations are by task).
            run = self._continuable(principal, task, message)
            self.budget.reserve(principal, task.context_id, task.id)
            return run, message.model_copy(update={"context_id": task.context_id})
        context_id = message.context_id or new_id()
        task_id = new_id()
        self.budget.reserve(principal, context_id, task_id)
        task = Task(
            id=task_id,
            context_id=context_id,
            status=TaskStatus(state=TaskState.SUBMITTED, timestamp=utcnow()),
        )
        run = self._live.new(principal, task, new_context=message.context_id is None)
        return run, message.model_copy(update={"context_id": context_id, "task_id": task_id})

    def _continuable(self, principal: str, task: Task, message: Message) -> TaskRun:
        state = task.status.state
        if state.terminal:
            raise UnsupportedOperationError(f"Task {task.id} is in terminal state: {state.value}")
        if message.context_id and message.context_id != task.context_id:
            raise _context_mismatch(message, task)
        run = self._live.get(principal, task.id)
        if (run is not None and run.in_flight) or not state.interrupted:
            raise UnsupportedOperationError(
                f"Task {task.id} is still running; wait until it needs input"
            )
        return run or self._live.of_stored(principal, task)


def _sections(setup: TurnSetup, queue: dict[str, JsonValue] | None) -> dict[str, Any]:
    """What the task's `a2aWrapper` says of its admission: the turn's options, the context it
    forked from, and where it waits in its context's queue."""
    sections: dict[str, Any] = {"options": dict(options_record(setup.options)) or None}
    sections["queue"] = queue
    if setup.fork_from is not None:
        sections["forked_from"] = {"contextId": setup.fork_from}
    return sections
