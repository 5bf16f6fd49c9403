"""Forks: the first message of a new context with `forkFrom: <contextId>` starts from a
native fork of that context's backend session (`Turn.fork_of`), the source untouched.

Only the same principal's contexts can be forked, and only one with a session; an unknown
context and another principal's answer the same, so neither is revealed. A backend that does
not declare `fork` refuses it (never a silent fresh session)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from core.backend.control import Capabilities
from core.engine.control.requested import Control
from core.engine.lanes import TurnLanes
from core.sessions.manager import SessionManager
from core.storage.contracts import TaskQuery, TaskStore
from core.wire.errors import InvalidParamsError, UnsupportedOperationError
from core.wire.models import Message

CANNOT_FORK = "This agent cannot fork a conversation; start a new context without forkFrom."


@dataclass(frozen=True)
class Fork:
    """What a forked context's first turn starts from: the source context, and its session."""

    source: str
    session_id: str


class Forks:
    def __init__(
        self,
        sessions: SessionManager,
        store: TaskStore,
        lanes: TurnLanes,
        capabilities: Callable[[], Capabilities],
    ) -> None:
        self._sessions = sessions
        self._store = store
        self._lanes = lanes
        self._capabilities = capabilities

    async def fork(self, principal: str, message: Message, control: Control) -> Fork | None:
        """The fork the message asks for (None: it asks for none), checked."""
        source = control.fork_from
        if source is None:
            return None
        field = f"{control.where}.forkFrom"
        if message.task_id:
            raise InvalidParamsError(
                "forkFrom starts a new context: send it without a taskId",
                violations=[("message.taskId", "absent with forkFrom")],
            )
        if not self._capabilities().fork:
            raise UnsupportedOperationError(CANNOT_FORK)
        context_id = message.context_id
        if context_id is not None and await self._started(principal, context_id):
            raise InvalidParamsError(
                f"Context {context_id} has begun already; forkFrom starts a new context",
                violations=[("message.contextId", "a context with no task yet")],
            )
        session = await self._sessions.fork_source(principal, source)
        if session is None or source == context_id:
            raise InvalidParamsError(
                f"There is no conversation {source} to fork",
                violations=[(field, "the contextId of one of your conversations")],
            )
        if self._lanes.busy(principal, source):
            raise UnsupportedOperationError(
                f"Conversation {source} has a turn running; fork it once that turn ended."
            )
        return Fork(source, session)

    async def _started(self, principal: str, context_id: str) -> bool:
        if self._lanes.busy(principal, context_id):
            return True
        page = await self._store.list(principal, TaskQuery(context_id=context_id, page_size=1))
        return bool(page.tasks)
