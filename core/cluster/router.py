"""The cluster router in front of the local engine (storage.kind "postgres").

The engine (core/engine/service.py) knows only the turns that run here. The router decides
where a request goes: a message of a context that another live replica owns is forwarded
to it and the caller is served from the task's events read back from the database; a new
context's first turn makes this replica its owner; a task whose turn runs on another live
replica is watched (subscribe) and cancelled there. Everything else is the engine's.
Without replicas the daemon wires the engine directly, so a send takes no replica branch.

Conversation control (core/engine/control/) travels with the request: a steer of a turn that
runs on another live replica is forwarded to it like any send (the owner steers it, and a
refusal comes back as the same error); a fork goes to the owner of the context it forks (the
source's session is there), which then owns the new context; a queued message and the
per-message options are checked by the replica that runs the turn.
"""

from __future__ import annotations

from contextlib import aclosing
from dataclasses import dataclass
from typing import Protocol

from core.engine.admission import Admitted
from core.engine.control.requested import control_of
from core.engine.service import TaskService
from core.engine.streams import EventSource, EventStream, apply_history_length
from core.engine.task_run import Notify, TaskRun
from core.storage.contracts import PushVersion
from core.wire.errors import DaemonError, InternalError
from core.wire.models import (
    CancelTaskRequest,
    Message,
    SendMessageRequest,
    StreamResponse,
    Task,
)


class Replicas(Protocol):
    """What the router asks of the other replicas (core/cluster/turns.py: ReplicaTasks)."""

    def record(self, principal: str, task_id: str, event: StreamResponse) -> None:
        """Called with each event of a task that runs here, in order; never waits. The event
        reaches the other replicas' watchers in that order."""

    async def running_elsewhere(self, principal: str, task_id: str) -> bool:
        """True when another live replica runs a turn of the task now."""
        ...

    def watch(self, principal: str, task_id: str) -> EventSource:
        """The events of a task running on another replica: its latest Task snapshot first,
        then every later event, in order, none twice."""
        ...

    async def cancel(self, principal: str, task_id: str) -> Task:
        """Ask the replica that runs the task to cancel it, wait (bounded) until the task is
        terminal, and return it as stored."""
        ...

    async def owner_elsewhere(self, principal: str, context_id: str) -> str | None:
        """The live replica that owns the context when it is not this one; else None, and
        this one owns it from now on."""
        ...

    async def forward(
        self, owner: str, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> EventSource:
        """Have `owner` run the turn: the events of its task from the turn's Task snapshot
        on. Raises the owner's refusal as the same error."""
        ...


def publishing(replicas: Replicas) -> Notify:
    """The engine's `Plugins.published`: every event of a task that runs here reaches the
    other replicas' watchers."""

    def published(run: TaskRun, event: StreamResponse) -> None:
        replicas.record(run.principal, run.task.id, event)

    return published


@dataclass(frozen=True, slots=True)
class _Forwarded:
    """A message the context's owner (another replica) took: its task's events from there."""

    events: EventSource


class ClusterRouter:
    """SendMessage, SendStreamingMessage, SubscribeToTask and CancelTask across replicas;
    `admit_here` and `cancel_here` take what another replica hands to this one."""

    def __init__(self, engine: TaskService, replicas: Replicas) -> None:
        self._engine = engine
        self._replicas = replicas

    # ----- sends -----------------------------------------------------------------------------

    async def send(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> Task | Message:
        taken = await self._taken(principal, request, version)
        if isinstance(taken, _Forwarded):
            return await self._answer_forwarded(principal, taken.events, request)
        return await self._engine.reply(taken, request)

    async def stream(
        self, principal: str, request: SendMessageRequest, *, version: PushVersion = "1.0"
    ) -> EventStream:
        taken = await self._taken(principal, request, version)
        if isinstance(taken, _Forwarded):
            return EventStream(taken.events, at_interrupt=True)
        return await self._engine.events(taken, request)

    async def _taken(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> Admitted | _Forwarded:
        """Where the message goes: the turn in flight here it is for (an approval's answer, a
        steer), else the context's owner when that is another live replica, else a new turn
        here. A steer of a turn running on another replica is forwarded to it like any send
        (the owner steers it); conversation control (`a2aWrapper`) travels with the request."""
        engine = self._engine
        message = request.message
        steer = control_of(request).delivery == "steer"
        steer_elsewhere = (
            steer
            and message.task_id is not None
            and await self._replicas.running_elsewhere(principal, message.task_id)
        )
        if not steer_elsewhere:
            admitted = await engine.answering(principal, request)
            if admitted is not None:
                return admitted
        forwarded = await self._forwarded(principal, request, version)
        if forwarded is not None:
            return _Forwarded(forwarded)
        if steer:
            # Its turn runs nowhere now: the engine says why it cannot be steered.
            steered = await engine.answering(principal, request)
            if steered is not None:
                return steered
        turn = await engine.admit(principal, request, version)
        await self._claim(principal, request, turn.task)
        return turn

    async def _forwarded(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> EventSource | None:
        """The turn's events from the replica that owns its context, when that is another
        live one (it ran there); None: it runs here. A fork goes to the owner of the context
        it forks (where that context's session is)."""
        message = request.message
        fork_from = control_of(request).fork_from
        context_id = fork_from if fork_from and not message.task_id else message.context_id
        if context_id is None and message.task_id:
            try:
                context_id = (await self._engine.load(principal, message.task_id)).context_id
            except DaemonError:
                return None  # admission says what is wrong with it
        if context_id is None:
            return None
        owner = await self._replicas.owner_elsewhere(principal, context_id)
        if owner is None:
            return None
        return await self._replicas.forward(owner, principal, request, version)

    async def _claim(self, principal: str, request: SendMessageRequest, task: Task) -> None:
        """A new context's first turn runs here (a fork's too): this replica owns the context
        (before the turn starts, so a follow-up sent to another replica comes here)."""
        message = request.message
        if message.task_id:
            return
        if message.context_id is None or control_of(request).fork_from is not None:
            await self._replicas.owner_elsewhere(principal, task.context_id)

    async def _answer_forwarded(
        self, principal: str, events: EventSource, request: SendMessageRequest
    ) -> Task | Message:
        config = request.configuration
        history_length = config.history_length if config else None
        blocking = config is None or not config.return_immediately
        last: StreamResponse | None = None
        async with aclosing(EventStream(events, at_interrupt=True).__aiter__()) as stream:
            async for event in stream:
                if not blocking and event.task is not None:
                    return apply_history_length(event.task, history_length)
                last = event
        if last is not None and last.message is not None:
            return last.message
        task = await self._engine.load(principal, _task_id(last))
        return apply_history_length(task, history_length)

    async def admit_here(
        self, principal: str, request: SendMessageRequest, version: PushVersion
    ) -> str:
        """A message another replica received for a context this one owns: taken here as a
        non-blocking send (a new turn started, or an approval's answer or a steer handed to the
        turn in flight here); its events start with a Task snapshot."""
        engine = self._engine
        admitted: Admitted | None = await engine.answering(principal, request)
        if admitted is None:
            admitted = await engine.admit(principal, request, version)
            await self._claim(principal, request, admitted.task)
        run = admitted.run
        if run.announced:
            # A later turn of the task, or its turn in flight: a fresh snapshot opens what
            # follows elsewhere.
            self._replicas.record(principal, run.task.id, StreamResponse(task=run.task))
        await engine.start(admitted, request)
        return run.task.id

    # ----- watching and cancelling -----------------------------------------------------------

    async def subscribe(self, principal: str, task_id: str) -> EventStream:
        if not self._engine.holds(principal, task_id) and await self._replicas.running_elsewhere(
            principal, task_id
        ):
            return EventStream(self._replicas.watch(principal, task_id), at_interrupt=False)
        return await self._engine.subscribe(principal, task_id)

    async def cancel(self, principal: str, request: CancelTaskRequest) -> Task:
        if not self._engine.holds(principal, request.id) and await self._replicas.running_elsewhere(
            principal, request.id
        ):
            return await self._replicas.cancel(principal, request.id)
        return await self._engine.cancel(principal, request)

    async def cancel_here(self, principal: str, task_id: str) -> None:
        """A cancel another replica received for a task whose turn runs here (a no-op when
        it has no turn in flight here any more)."""
        await self._engine.cancel_turn(principal, task_id)


def _task_id(event: StreamResponse | None) -> str:
    if event is not None and event.status_update is not None:
        return event.status_update.task_id
    if event is not None and event.artifact_update is not None:
        return event.artifact_update.task_id
    if event is not None and event.task is not None:
        return event.task.id
    raise InternalError("A forwarded turn ended without an event")
