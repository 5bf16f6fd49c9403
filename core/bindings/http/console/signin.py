"""Who is using the console: a sign-in with a bearer token of `server.auth.tokens` (or, with
no tokens configured, the `anonymous` principal of a loopback bind) gives a session held in an
HttpOnly, SameSite=Strict cookie; each session has its own CSRF token, which every
state-changing request must carry.

Sessions live in this daemon's memory: a restart (or another replica) asks to sign in again.
"""

from __future__ import annotations

import hmac
import secrets
import time
from dataclasses import dataclass

from aiohttp import web

from core.api.principals import Principals
from core.settings import Settings

COOKIE = "a2a_console"
PREFIX = "/console"


@dataclass(frozen=True)
class Session:
    principal: str
    csrf: str
    expires: float


class SignIns:
    def __init__(self, settings: Settings) -> None:
        self._principals = Principals(settings)
        self._ttl = settings.console.session_ttl / 1000
        self._sessions: dict[str, Session] = {}

    @property
    def token_required(self) -> bool:
        return self._principals.required

    def sign_in(self, token: str | None) -> tuple[str, Session] | None:
        """A new session for the principal of `token` (None when it is wrong); without
        configured tokens everyone is the anonymous principal."""
        principal = self._principals.of(f"Bearer {token or ''}")
        if principal is None:
            return None
        self._forget_expired()
        key = secrets.token_urlsafe(32)
        session = Session(principal, secrets.token_urlsafe(32), time.monotonic() + self._ttl)
        self._sessions[key] = session
        return key, session

    def sign_out(self, key: str) -> None:
        self._sessions.pop(key, None)

    def of(self, request: web.Request) -> Session | None:
        key = request.cookies.get(COOKIE)
        session = self._sessions.get(key) if key else None
        if session is None or session.expires < time.monotonic():
            return None
        return session

    def _forget_expired(self) -> None:
        now = time.monotonic()
        for key in [k for k, s in self._sessions.items() if s.expires < now]:
            del self._sessions[key]


def set_cookie(request: web.Request, response: web.StreamResponse, key: str, ttl: int) -> None:
    response.set_cookie(
        COOKIE,
        key,
        path=PREFIX,
        httponly=True,
        samesite="Strict",
        secure=request.secure,
        max_age=ttl // 1000,
    )


def csrf_ok(session: Session, given: str | None) -> bool:
    return given is not None and hmac.compare_digest(session.csrf.encode(), given.encode())


def same_origin(request: web.Request) -> bool:
    """A browser's request from a page of this daemon (or one that names no origin)."""
    origin = request.headers.get("Origin")
    return origin is None or origin.rstrip("/") == f"{request.scheme}://{request.host}"
