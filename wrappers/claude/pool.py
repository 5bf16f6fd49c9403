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
from claude_agent_sdk.types import EffortLevel, PermissionMode

from core.backend import Turn
from wrappers.claude import process
from wrappers.claude.approvals import Approver
from wrappers.claude.control import Guard, effort

Key = tuple[str, str]
"""(principal, contextId)."""


@dataclass(eq=False)
class Pump:
    """The reader of one turn's messages (see ClaudeBackend._pump): `done` is set once the
    turn's messages have ended, `result` is its ResultMessage when it got one."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: ResultMessage | None = None
    pending: set[str] = field(default_factory=set)
    """The uuids of steered messages written to the CLI that it has not taken yet: a result
    while one is pending ends only a part of the turn (the CLI runs it next)."""
    interrupted: bool = False
    """The turn is being interrupted: the next result ends it, steered messages or not."""

    @property
    def closed(self) -> bool:
        """The turn takes no more steered messages (it is ending, or ended)."""
        return self.interrupted or self.result is not None or self.done.is_set()

    def ends(self) -> bool:
        """Whether a result arriving now ends the turn."""
        return self.interrupted or not self.pending


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
    effort: EffortLevel | None = None
    """The effort the process started with (None: Claude Code's own default)."""
    model: str | None = None
    """The model the process is set to now (its turn may have chosen one)."""
    permission_mode: PermissionMode = "acceptEdits"
    """The permission mode the process is in now (its turn may have chosen `plan`)."""
    guard: Guard = field(default_factory=Guard)
    """The client's PreToolUse hook, armed for a `plan` or `readOnly` turn."""

    @property
    def busy(self) -> bool:
        return self.task_id is not None


def unusable(warm: WarmClient, turn: Turn) -> str | None:
    """Why the context's warm client cannot take `turn`, or None when it can."""
    reasons = (
        # A turn that ended without being interrupted: the client's state is unknown.
        ("stale", warm.busy),
        ("other session", turn.session_id is None or warm.session_id != turn.session_id),
        ("exited", warm.pid is not None and not process.alive(warm.pid)),
        # Fixed when the process starts: its permission callback, its cwd (the context's
        # workspace moved) and its effort (`--effort`).
        ("approvals mode changed", (warm.approver is not None) != (turn.approvals == "ask")),
        ("workspace changed", warm.cwd != turn.cwd),
        ("effort changed", warm.effort != effort(turn.options)),
    )
    return next((reason for reason, applies in reasons if applies), None)
