"""Warm sessions: a live SDK session per active conversation, so a follow-up turn is one RPC.

A `WarmSession` belongs to the CLI child it was opened on; when that child ends, its sessions
are forgotten (the conversation stays on disk and is resumed on the next child). Which stay is
the kit's `WarmPool` (`maxWarm` LRU, `warmIdle`, a session with a running turn never evicted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from copilot import CopilotSession, PermissionRequest
from copilot.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.session_events import SessionEvent, SessionIdleData, UserMessageData

from core.backend import ApprovalRequest, Mode
from core.backend.pool import WarmPool
from wrappers.copilot.control import NO_EDIT, Applied, Base, edit_refusal
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
    mode: Mode | None = None
    """The turn's own mode (None: the configured one, `default`)."""
    done: anyio.Event = field(default_factory=anyio.Event)
    sent: bool = False
    prompt_id: str | None = None
    """The CLI's id of the turn's own message."""
    steering: int = 0
    """Steered messages whose `user.message` the CLI has not reported yet."""

    def close(self) -> None:
        self.send.close()
        self.receive.close()


@dataclass(eq=False)
class WarmSession:
    session_id: str
    child: Child
    policy: PermissionPolicy
    cwd: Path | None = None
    """The workspace the session was opened in (None: the configured workingDirectory)."""
    session: CopilotSession | None = None
    turn: ActiveTurn | None = None
    # What the caller approved with `approve_always` in this session (request_key()).
    always: set[str] = field(default_factory=set)
    base: Base | None = None
    """The model and effort the session was opened with (control.base_of)."""
    applied: Applied = field(default_factory=Applied)
    """The model, effort and mode a turn switched the session to (control.apply)."""

    async def permission(self, request: PermissionRequest, invocation: object) -> Answer:
        """The SDK's permission callback: the policy decides; in `approvals.mode: ask` what
        only the default policy would refuse is asked of the caller, and this waits. A turn
        that may not edit (plan, readOnly) refuses what would change anything first."""
        turn = self.turn
        if turn is not None and turn.mode in NO_EDIT:
            state = None if self.session is None else self.session.workspace_path
            refusal = edit_refusal(request, turn.mode, state if turn.mode == "plan" else None)
            if refusal is not None:
                return PermissionDecisionReject(feedback=refusal)
        decision = self.policy.decide(request)
        key = request_key(request)
        if decision.approved or not decision.by_default or key in self.always:
            return PermissionDecisionApproveOnce() if key in self.always else answer_for(decision)
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

    def begin(
        self, task_id: str, approvals: Literal["policy", "ask"] = "policy", mode: Mode | None = None
    ) -> ActiveTurn:
        send, receive = anyio.create_memory_object_stream[TurnItem](math.inf)
        self.turn = ActiveTurn(task_id, send, receive, approvals, mode)
        return self.turn

    def end(self) -> None:
        """The session's turn is over."""
        if self.turn is not None:
            self.turn.close()
            self.turn = None

    def dispatch(self, event: SessionEvent) -> None:
        """The SDK's event callback (runs in the event loop): route to the running turn."""
        turn = self.turn
        if turn is None or turn.done.is_set():
            return
        data = event.data
        if event.agent_id:
            turn.send.send_nowait(event)
            return
        if isinstance(data, UserMessageData) and data.message_id != turn.prompt_id:
            if data.source in (None, "user"):
                turn.steering = max(0, turn.steering - 1)
        elif isinstance(data, SessionIdleData) and turn.steering and not data.aborted:
            # A steered message the CLI took just after this run ended starts a run of its
            # own: that run is still this turn, which ends at its idle.
            return
        turn.send.send_nowait(event)
        if isinstance(data, SessionIdleData):
            turn.done.set()

    def child_exited(self) -> None:
        turn = self.turn
        if turn is not None and not turn.done.is_set():
            turn.send.send_nowait(ChildExited(self.child.returncode))
            turn.done.set()


class WarmSessions(WarmPool[str, WarmSession]):
    """The kit's warm pool (by session id), plus what a session of Copilot's shared CLI
    needs: one of a CLI that is gone is never handed out, a turn's session is found by its
    task, and a CLI that ends takes its sessions along."""

    def live(self, session_id: str) -> WarmSession | None:
        warm = self.get(session_id)
        return warm if warm is not None and warm.child.alive else None

    def for_task(self, task_id: str) -> WarmSession | None:
        for warm in self.values():
            if warm.turn is not None and warm.turn.task_id == task_id:
                return warm
        return None

    def forget_child(self, child: Child) -> list[WarmSession]:
        """Drop every session of a child that is gone."""
        gone = [w for w in self.values() if w.child is child]
        for warm in gone:
            self.remove(warm.session_id)
        return gone
