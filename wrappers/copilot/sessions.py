"""Warm sessions: a live SDK session per active conversation, so a follow-up turn is one RPC.

A `WarmSession` belongs to the CLI child it was opened on; when that child ends, its sessions
are forgotten (the conversation stays on disk and is resumed on the next child). The pool keeps
at most `maxWarm` idle sessions, least recently used first out, and lets go of any idle longer
than `warmIdle`; a session with a running turn is never evicted.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from copilot import CopilotSession, PermissionRequest
from copilot.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.session_events import SessionEvent, SessionIdleData

from core.backend import ApprovalRequest
from wrappers.copilot.permissions import (
    Answer,
    PermissionPolicy,
    answer_for,
    approval_request,
    request_key,
)
from wrappers.copilot.runtime import Child


@dataclass(frozen=True)
class ChildExited:
    """Put into a running turn's stream when the CLI process is gone."""

    returncode: int | None


TurnItem = SessionEvent | ChildExited | ApprovalRequest


@dataclass(eq=False)
class ActiveTurn:
    """The running turn of a session: its events (and approval questions), in order, and
    whether it is over."""

    task_id: str
    send: MemoryObjectSendStream[TurnItem]
    receive: MemoryObjectReceiveStream[TurnItem]
    approvals: Literal["policy", "ask"] = "policy"
    done: anyio.Event = field(default_factory=anyio.Event)
    sent: bool = False

    def close(self) -> None:
        self.send.close()
        self.receive.close()


@dataclass(eq=False)
class WarmSession:
    session_id: str
    child: Child
    policy: PermissionPolicy
    session: CopilotSession | None = None
    turn: ActiveTurn | None = None
    last_used: float = 0.0
    # What the caller approved with `approve_always` in this session (request_key()).
    always: set[str] = field(default_factory=set)

    async def permission(self, request: PermissionRequest, invocation: object) -> Answer:
        """The SDK's permission callback: the policy decides; in `approvals.mode: ask` what
        only the default policy would refuse is asked of the caller, and this waits."""
        decision = self.policy.decide(request)
        key = request_key(request)
        if decision.approved or not decision.by_default or key in self.always:
            return PermissionDecisionApproveOnce() if key in self.always else answer_for(decision)
        turn = self.turn
        if turn is None or turn.approvals != "ask" or turn.done.is_set():
            return answer_for(decision)
        question = approval_request(request, decision)
        try:
            turn.send.send_nowait(question)
        except anyio.ClosedResourceError:
            return answer_for(decision)
        reply = await question.reply.wait()
        if reply.decision == "deny":
            return PermissionDecisionReject(feedback=reply.message or "The caller denied this.")
        if reply.decision == "approve_always":
            self.always.add(key)
        return PermissionDecisionApproveOnce()

    def dispatch(self, event: SessionEvent) -> None:
        """The SDK's event callback (runs in the event loop): route to the running turn."""
        turn = self.turn
        if turn is None or turn.done.is_set():
            return
        turn.send.send_nowait(event)
        if isinstance(event.data, SessionIdleData) and not event.agent_id:
            turn.done.set()

    def child_exited(self) -> None:
        turn = self.turn
        if turn is not None and not turn.done.is_set():
            turn.send.send_nowait(ChildExited(self.child.returncode))
            turn.done.set()


class SessionPool:
    def __init__(self, *, warm_idle_ms: int, max_warm: int) -> None:
        self._idle = warm_idle_ms / 1000 if warm_idle_ms > 0 else math.inf
        self._max = max_warm
        self._sessions: OrderedDict[str, WarmSession] = OrderedDict()
        self._changed = anyio.Event()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> WarmSession | None:
        warm = self._sessions.get(session_id)
        if warm is None or not warm.child.alive:
            return None
        self._sessions.move_to_end(session_id)
        return warm

    def add(self, warm: WarmSession) -> None:
        warm.last_used = anyio.current_time()
        self._sessions[warm.session_id] = warm
        self._sessions.move_to_end(warm.session_id)
        self._notify()

    def begin(
        self, warm: WarmSession, task_id: str, approvals: Literal["policy", "ask"] = "policy"
    ) -> ActiveTurn:
        send, receive = anyio.create_memory_object_stream[TurnItem](math.inf)
        warm.turn = ActiveTurn(task_id, send, receive, approvals)
        return warm.turn

    def end(self, warm: WarmSession) -> None:
        """The session's turn is over: it may be evicted from now on."""
        if warm.turn is not None:
            warm.turn.close()
            warm.turn = None
        warm.last_used = anyio.current_time()
        self._notify()

    def for_task(self, task_id: str) -> WarmSession | None:
        for warm in self._sessions.values():
            if warm.turn is not None and warm.turn.task_id == task_id:
                return warm
        return None

    def remove(self, session_id: str) -> WarmSession | None:
        warm = self._sessions.pop(session_id, None)
        if warm is not None:
            self._notify()
        return warm

    def forget_child(self, child: Child) -> list[WarmSession]:
        """Drop every session of a child that is gone."""
        gone = [w for w in self._sessions.values() if w.child is child]
        for warm in gone:
            del self._sessions[warm.session_id]
        return gone

    def take_evictable(self, now: float) -> list[WarmSession]:
        """Remove and return the idle sessions to close: idle too long, or beyond `maxWarm`."""
        idle = [w for w in self._sessions.values() if w.turn is None]
        evict = [w for w in idle if now - w.last_used >= self._idle]
        excess = len(self._sessions) - len(evict) - self._max
        for warm in idle:  # least recently used first
            if excess <= 0:
                break
            if warm not in evict:
                evict.append(warm)
                excess -= 1
        for warm in evict:
            del self._sessions[warm.session_id]
        return evict

    def take_all(self) -> list[WarmSession]:
        sessions = list(self._sessions.values())
        self._sessions.clear()
        return sessions

    def next_deadline(self) -> float:
        """When the next idle session expires (`math.inf`: never)."""
        idle = [w.last_used for w in self._sessions.values() if w.turn is None]
        return min(idle) + self._idle if idle else math.inf

    async def wait_changed(self, deadline: float) -> None:
        """Until the pool changes or `deadline` (an `anyio.current_time()` value) passes."""
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await self._changed.wait()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()
