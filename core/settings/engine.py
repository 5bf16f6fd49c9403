"""The engine's blocks of the Settings model (session, timeouts, output, hooks, approvals);
`core.settings.sections.engine_config` turns them into the engine's frozen `EngineConfig`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from core.backend.config import Block


class SessionSettings(Block):
    reuse_by_context: bool = Field(
        default=True,
        description="Continue a context's backend session on every message of that context; "
        "false = a fresh backend session per message",
    )
    ttl: int = Field(
        default=0, ge=0, description="ms from a session's creation until it expires; 0 = never"
    )
    cleanup_interval: int = Field(
        default=300_000,
        ge=0,
        description="ms between sweeps that drop expired sessions; 0 = no sweep; only when ttl > 0",
    )
    max_queued_turns: int = Field(
        default=16, ge=0, description="Turns that may wait behind the running one in a context"
    )


class TimeoutSettings(Block):
    turn: int = Field(default=30 * 60_000, ge=0, description="ms wall clock per turn; 0 = none")
    idle: int = Field(
        default=5 * 60_000, ge=0, description="ms without any event from the agent; 0 = none"
    )


class OutputSettings(Block):
    mode: Literal["final", "stream"] = Field(
        default="final",
        description="final: one response artifact at the end; stream: text deltas as artifact "
        "chunks",
    )
    progress: bool = Field(
        default=True, description="Tool calls and file changes as WORKING updates"
    )
    reasoning: bool = Field(default=False, description="Forward the agent's reasoning text")


class HookSettings(Block):
    before_turn: str | None = Field(
        default=None,
        description="package.module:function; may refuse a turn with a reason (REJECTED)",
    )
    after_event: str | None = Field(
        default=None,
        description="package.module:function; may redact or drop each event before it is "
        "stored or sent",
    )
    after_turn: str | None = Field(
        default=None, description="package.module:function; may rewrite a turn's final status"
    )
    timeout: int = Field(
        default=5000, ge=1, description="ms a hook may take; then the unhooked value is used"
    )


class ApprovalSettings(Block):
    mode: Literal["policy", "ask"] = Field(
        default="policy",
        description="policy: the backend's allow/deny rules decide; ask: a request they do not "
        "decide becomes an input-required question to the caller",
    )
    timeout: int = Field(default=600_000, ge=1, description="ms a question waits for an answer")
    on_timeout: Literal["deny", "fail"] = Field(
        default="deny",
        description="deny: the agent sees a denial and the turn goes on; fail: the task fails",
    )
