"""Readiness (`/ready`): can the daemon take work now, and if not, why, in words for the caller.

`/ready` needs no token, so what it says is written here, never taken from an exception or a
backend's detail text (an HTTP client's error can carry an upstream body). The raw text goes
to the log under the error id the answer carries.
"""

from __future__ import annotations

import errno
import sqlite3
import uuid
from dataclasses import dataclass

import structlog
from pydantic import JsonValue

from core.backend import Backend, Failed
from core.storage.contracts import TaskStore

log = structlog.get_logger(__name__)

_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})

STORAGE_FULL = "storage_full"
STORAGE_UNWRITABLE = "storage_unwritable"
BACKEND_UNHEALTHY = "backend_unhealthy"
BACKEND_CHECK_FAILED = "backend_check_failed"
CREDENTIALS = "credentials"

MESSAGES = {
    STORAGE_FULL: "The disk holding the task store is full; no task can be saved",
    STORAGE_UNWRITABLE: "The task store cannot be written to",
    BACKEND_UNHEALTHY: "The {backend} backend is not healthy",
    BACKEND_CHECK_FAILED: "The {backend} backend's health check failed",
    CREDENTIALS: "The model provider refused the {backend} agent's credentials at its last turn",
}
# The Failed kinds that are the model provider's refusals (core/backend/upstream.py).
UPSTREAM_KINDS = frozenset({"auth", "quota", "rateLimit", "upstream"})


class CredentialWatch:
    """Whether the agent's credentials are known bad: since a turn ended because the provider
    refused them, until a turn got past them (completed, or refused for another reason)."""

    def __init__(self) -> None:
        self.refused_by: str | None = None  # the error id of that turn's failure

    def refused(self, error_id: str | None) -> None:
        self.refused_by = error_id or "unknown"

    def accepted(self) -> None:
        self.refused_by = None


def error_section(failed: Failed) -> dict[str, JsonValue]:
    """`a2aWrapper.error` of a turn the provider refused: its kind, when to retry, the id of
    the log line with the provider's own words."""
    section: dict[str, JsonValue] = {"kind": failed.kind}
    if failed.retry_after is not None:
        section["retryAfter"] = failed.retry_after
    if failed.resets_at is not None:
        section["resetsAt"] = failed.resets_at.isoformat(timespec="seconds")
    if failed.error_id is not None:
        section["errorId"] = failed.error_id
    return section


@dataclass(frozen=True)
class Readiness:
    """`reason` is one of the constants above (empty when ready); `message` is safe to show
    to anyone; `detail` is the backend's own detail, only when ready."""

    ok: bool
    reason: str = ""
    message: str = ""
    error_id: str = ""
    detail: str = ""


def disk_full(exc: BaseException) -> bool:
    """SQLITE_FULL or ENOSPC/EDQUOT anywhere in the exception's cause chain."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, sqlite3.Error) and seen.sqlite_errorcode == sqlite3.SQLITE_FULL:
            return True
        if isinstance(seen, OSError) and seen.errno in _FULL_ERRNOS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _not_ready(reason: str, backend: str, **logged: object) -> Readiness:
    error_id = uuid.uuid4().hex[:12]
    log.warning("daemon.not_ready", reason=reason, error_id=error_id, **logged)
    message = MESSAGES[reason].format(backend=backend)
    return Readiness(False, reason, f"{message} (error id {error_id}).", error_id)


async def check(
    store: TaskStore, backend: Backend, credentials: CredentialWatch | None = None
) -> Readiness:
    """The store takes a write (`probe`), then the backend says it is healthy, and its
    credentials are not known bad. Never raises but for cancellation."""
    try:
        await store.probe()
    except Exception as exc:  # noqa: BLE001 - any failure means not ready; the log says which
        reason = STORAGE_FULL if disk_full(exc) else STORAGE_UNWRITABLE
        return _not_ready(reason, backend.name, error=repr(exc))
    try:
        health = await backend.health()
    except Exception as exc:  # noqa: BLE001 - a raising check is a failed check
        return _not_ready(BACKEND_CHECK_FAILED, backend.name, error=repr(exc))
    if not health.ok:
        return _not_ready(BACKEND_UNHEALTHY, backend.name, detail=health.detail)
    if credentials is not None and credentials.refused_by is not None:
        return _not_ready(CREDENTIALS, backend.name, refused_by=credentials.refused_by)
    return Readiness(True, detail=health.detail)
