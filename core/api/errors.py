"""Rendering exceptions for the wire; the single place unknown exceptions are turned opaque."""

from __future__ import annotations

import uuid

import structlog

from core.wire.errors import DaemonError, InternalError

log = structlog.get_logger(__name__)


def as_daemon_error(exc: Exception, *, debug: bool) -> DaemonError:
    """Known errors pass through; anything else is logged under an opaque id."""
    if isinstance(exc, DaemonError):
        return exc
    error_id = uuid.uuid4().hex[:12]
    log.error("request.internal_error", error_id=error_id, exc_info=exc)
    detail = f": {type(exc).__name__}: {exc}" if debug else ""
    return InternalError(f"Internal error (error_id {error_id}){detail}")
