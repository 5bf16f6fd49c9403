"""What `a2a-wrapper check` says of an agent's recorded login: when it expires.

Agents record their logins in files of their own (a credentials JSON file with an epoch
expiry, an auth file holding a JWT access token, ...). A backend reads the expiry from its
agent's file and reports it with `expiry_note`, so every backend says it the same way. Nothing
here returns a secret: a token is read only for its expiry claim.
"""

from __future__ import annotations

import base64
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def read_json(path: Path) -> dict[str, Any] | None:
    """The JSON object in `path`, or None when it is missing, unreadable or not an object."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def epoch(value: object) -> datetime | None:
    """A time given as seconds or milliseconds since the epoch (either is used in the wild)."""
    if not isinstance(value, int | float) or isinstance(value, bool) or value <= 0:
        return None
    seconds = value / 1000 if value > 10**11 else value
    return datetime.fromtimestamp(seconds, tz=UTC)


def jwt_expiry(token: object) -> datetime | None:
    """The `exp` claim of a JWT (not verified: it only tells when the agent's login lapses)."""
    if not isinstance(token, str) or token.count(".") != 2:
        return None
    payload = token.split(".")[1]
    try:
        claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    except (ValueError, TypeError):
        return None
    return epoch(claims.get("exp")) if isinstance(claims, dict) else None


def expiry_note(
    expires: datetime | None, *, renewable: bool = False, now: datetime | None = None
) -> tuple[bool, str]:
    """Whether a login that expires at `expires` is usable, and the words for `check`:
    "expires at ..." or "expired at ..." (a `renewable` one, with a refresh token, renews
    itself at its next use and stays usable)."""
    if expires is None:
        return True, "no expiry recorded"
    stamp = expires.astimezone(UTC).isoformat(timespec="seconds")
    if expires > (now or datetime.now(UTC)):
        return True, f"expires at {stamp}"
    if renewable:
        return True, f"expired at {stamp}; the agent renews it with its refresh token"
    return False, f"expired at {stamp}"
