"""Bookkeeping of the warm clients: one live Claude Code process per active context.

`WarmPool` decides, the backend acts: the pool never awaits anything, it only says which
clients to retire (idle longer than `warmIdle`, or the least recently used beyond `maxWarm`).
A client in use by a turn is never retired by the policy.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

import anyio
from claude_agent_sdk import ClaudeSDKClient, ResultMessage

from wrappers.claude.approvals import Approver

Key = tuple[str, str]
"""(principal, contextId)."""


@dataclass(eq=False)
class Pump:
    """The reader of one turn's messages (see ClaudeBackend._pump): `done` is set once the
    turn's messages have ended, `result` is its ResultMessage when it got one."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: ResultMessage | None = None


@dataclass(eq=False)
class WarmClient:
    key: Key
    client: ClaudeSDKClient
    pid: int | None
    session_id: str | None
    cost_total: float | None = 0.0
    """The session's cumulative cost so far (the CLI reports it per session, not per turn);
    None when unknown (a session resumed after a restart, until its first result)."""
    task_id: str | None = None
    """The task whose turn uses the client now; None when idle."""
    prompt_sent: bool = False
    """The turn's prompt reached the CLI: stopping it needs an interrupt, not just a release."""
    last_used: float = field(default_factory=time.monotonic)
    approver: Approver | None = None
    """The permission callback when the client asks the caller (`approvals.mode: ask`)."""
    pump: Pump | None = None
    """The reader of the current turn's messages, once its prompt is sent."""

    @property
    def busy(self) -> bool:
        return self.task_id is not None


class WarmPool:
    def __init__(self, *, max_warm: int, idle_seconds: float | None) -> None:
        """`idle_seconds`: how long an idle client stays; None = until evicted by `max_warm`."""
        self._max_warm = max_warm
        self._idle = idle_seconds
        self._clients: OrderedDict[Key, WarmClient] = OrderedDict()

    def __len__(self) -> int:
        return len(self._clients)

    def get(self, key: Key) -> WarmClient | None:
        return self._clients.get(key)

    def add(self, warm: WarmClient) -> list[WarmClient]:
        """Track `warm` (most recently used); returns the idle clients it pushes out."""
        self._clients[warm.key] = warm
        self._clients.move_to_end(warm.key)
        surplus = len(self._clients) - self._max_warm
        evicted = [w for w in self._clients.values() if not w.busy][: max(0, surplus)]
        for old in evicted:
            del self._clients[old.key]
        return evicted

    def remove(self, warm: WarmClient) -> bool:
        """Forget `warm`; False when it was not (or no longer) tracked."""
        if self._clients.get(warm.key) is warm:
            del self._clients[warm.key]
            return True
        return False

    def checkout(self, warm: WarmClient, task_id: str) -> None:
        warm.task_id = task_id
        warm.prompt_sent = False
        warm.pump = None
        if warm.key in self._clients:
            self._clients.move_to_end(warm.key)

    def release(self, warm: WarmClient) -> None:
        warm.task_id = None
        warm.prompt_sent = False
        warm.pump = None
        if warm.approver is not None:
            warm.approver.end()
        warm.last_used = time.monotonic()

    def expired(self, now: float) -> list[WarmClient]:
        """Remove and return the idle clients unused for longer than the idle limit."""
        if self._idle is None:
            return []
        idle = self._idle
        old = [w for w in self._clients.values() if not w.busy and now - w.last_used >= idle]
        for warm in old:
            del self._clients[warm.key]
        return old

    def next_expiry(self) -> float | None:
        """When the next idle client expires (monotonic time), if any does."""
        if self._idle is None:
            return None
        times = [w.last_used + self._idle for w in self._clients.values() if not w.busy]
        return min(times, default=None)

    def with_session(self, session_id: str) -> list[WarmClient]:
        return [w for w in self._clients.values() if w.session_id == session_id]

    def drain(self) -> list[WarmClient]:
        """Remove and return every client."""
        clients = list(self._clients.values())
        self._clients.clear()
        return clients
