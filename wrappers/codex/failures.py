"""The Failed events of the Codex backend's own failures: sentences for the caller, the
app-server's words in the log under an error id."""

from __future__ import annotations

from core.backend import Failed, FailureKind, safe_failure
from wrappers.codex.appserver import AppServerExitedError


def server_gone(kind: FailureKind, reason: str) -> Failed:
    # The reason quotes the app-server's last stderr line: for the log only.
    return safe_failure(
        kind,
        "The Codex app-server stopped during the turn. The next message starts a new one and "
        "continues this conversation.",
        event="codex.app_server.gone",
        detail=reason,
    )


def turn_refused(exc: Exception) -> Failed:
    if isinstance(exc, AppServerExitedError):
        return server_gone("unavailable", str(exc))
    if isinstance(exc, TimeoutError):
        return Failed("error", "Codex did not start the turn in time.")
    return safe_failure("error", "Codex refused the turn.", event="codex.turn.refused", exc=exc)
