"""A warm client: one live Claude Code process per active context, and the state of its turn.

Which clients stay is the kit's `core.backend.pool.WarmPool` (keyed by `Key`): it says which
to retire (idle longer than `warmIdle`, or the least recently used beyond `maxWarm`), never one
taking a turn; the backend retires them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

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
    approver: Approver | None = None
    """The permission callback when the client asks the caller (`approvals.mode: ask`)."""
    pump: Pump | None = None
    """The reader of the current turn's messages, once its prompt is sent."""
    cwd: Path | None = None
    """The workspace the process started in (None: the configured workingDirectory)."""

    @property
    def busy(self) -> bool:
        return self.task_id is not None
