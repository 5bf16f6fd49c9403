"""The task's `a2aWrapper` metadata section: what the daemon says about a task (backend,
session, usage, approvals, workspace), as typed fields. `TaskRun` holds one
and renders it into the task's metadata on every change; a stored task's section is read back
only when a run is made from that task (`WrapperSection.of`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pydantic import JsonValue

from core.backend import Usage
from core.wire.models import Task

WRAPPER_METADATA_KEY = "a2aWrapper"
# What each turn says anew (a lease starts from these): the provider's refusal, whether the
# context's session was lost.
TURN_OUTCOME: dict[str, JsonValue] = {
    "context_reset": False,
    "reset_reason": None,
    "error": None,
}
UNKNOWN_RESET = "The agent could not resume the context's session; a new session served the turn."


def usage_record(usage: Usage) -> dict[str, JsonValue]:
    """A turn's usage as the section's `usage` says it."""
    return {
        "inputTokens": usage.input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_tokens,
        "cacheCreationTokens": usage.cache_creation_tokens,
        "costUsd": usage.cost_usd,
        "model": usage.model,
    }


@dataclass(frozen=True)
class WrapperSection:
    """What the daemon says about a task in its `a2aWrapper` metadata section."""

    backend: str | None = None
    leased: bool = False
    session_id: str | None = None
    resume_command: str | None = None
    new_session: bool = False
    expired_session: bool = False
    usage: Mapping[str, JsonValue] | None = None
    approvals: tuple[Mapping[str, JsonValue], ...] = ()
    workspace: Mapping[str, JsonValue] | None = None
    # The session the turn was to resume could not be continued (a fresh one serves it).
    context_reset: bool = False
    reset_reason: str | None = None
    # Why the turn failed, when the provider refused it (`kind`, `retryAfter`, ...).
    error: Mapping[str, JsonValue] | None = None
    # Conversation control (core/engine/control/): the options the turn runs with, the
    # context this one forked from, and where a waiting task is in its context's queue.
    options: Mapping[str, JsonValue] | None = None
    forked_from: Mapping[str, JsonValue] | None = None
    queue: Mapping[str, JsonValue] | None = None

    @classmethod
    def of(cls, task: Task) -> WrapperSection | None:
        """The section of a stored task (None when it has none): the one place it is read."""
        raw = (task.metadata or {}).get(WRAPPER_METADATA_KEY)
        if not isinstance(raw, dict):
            return None
        session = raw.get("sessionId")
        command = raw.get("resumeCommand")
        usage = raw.get("usage")
        approvals = raw.get("approvals")
        backend = raw.get("backend")
        workspace = raw.get("workspace")
        reason = raw.get("resetReason")
        error = raw.get("error")
        options, forked, queue = raw.get("options"), raw.get("forkedFrom"), raw.get("queue")
        return cls(
            backend=backend if isinstance(backend, str) else None,
            leased="sessionId" in raw,
            session_id=session if isinstance(session, str) else None,
            resume_command=command if isinstance(command, str) else None,
            new_session=raw.get("newSession") is True,
            expired_session=raw.get("expiredSession") is True,
            usage=usage if isinstance(usage, dict) else None,
            approvals=tuple(a for a in approvals if isinstance(a, dict))
            if isinstance(approvals, list)
            else (),
            workspace=workspace if isinstance(workspace, dict) else None,
            context_reset=raw.get("contextReset") is True,
            reset_reason=reason if isinstance(reason, str) else None,
            error=error if isinstance(error, dict) else None,
            options=options if isinstance(options, dict) else None,
            forked_from=forked if isinstance(forked, dict) else None,
            queue=queue if isinstance(queue, dict) else None,
        )

    def bound(self, session_id: str, resume_command: str | None) -> WrapperSection:
        """The backend named the session serving the task (and how to open it). Another id
        than the one the turn resumed means the agent could not continue that session: the
        task says it is a new one, and that the context was reset (why, when the backend said:
        `reset`)."""
        resumed = self.session_id
        lost = resumed is not None and resumed != session_id
        return self.evolve(
            leased=True,
            session_id=session_id,
            resume_command=resume_command or None,
            new_session=self.new_session or lost,
            context_reset=self.context_reset or lost,
            reset_reason=self.reset_reason or (UNKNOWN_RESET if lost else None),
        )

    def reset(self, reason: str) -> WrapperSection:
        """The backend could not resume the turn's session, for `reason`."""
        return self.evolve(context_reset=True, reset_reason=reason)

    def evolve(self, **changes: Any) -> WrapperSection:
        """`dataclasses.replace(self, **changes)` for this plain frozen record (no
        `__post_init__`, no init-only fields) at a quarter of its cost: a turn changes the
        section several times, and `replace` re-runs the 17-field frozen `__init__`."""
        if not changes.keys() <= _FIELDS:
            unknown = ", ".join(sorted(changes.keys() - _FIELDS))
            raise TypeError(f"WrapperSection has no field {unknown}")
        changed = object.__new__(WrapperSection)
        object.__setattr__(changed, "__dict__", {**self.__dict__, **changes})
        return changed

    def render(self) -> dict[str, JsonValue]:
        section: dict[str, JsonValue] = {}
        if self.backend is not None:
            section["backend"] = self.backend
        if self.leased:
            section["sessionId"] = self.session_id
            if self.resume_command:
                section["resumeCommand"] = self.resume_command
            section["newSession"] = self.new_session
            section["expiredSession"] = self.expired_session
            section["contextReset"] = self.context_reset
            if self.reset_reason:
                section["resetReason"] = self.reset_reason
        if self.error is not None:
            section["error"] = dict(self.error)
        if self.usage is not None:
            section["usage"] = dict(self.usage)
        if self.approvals:
            section["approvals"] = [dict(a) for a in self.approvals]
        if self.workspace is not None:
            section["workspace"] = dict(self.workspace)
        for key, value in (
            ("options", self.options),
            ("forkedFrom", self.forked_from),
            ("queue", self.queue),
        ):
            if value is not None:
                section[key] = dict(value)
        return section


_FIELDS = frozenset(f.name for f in fields(WrapperSection))
