"""Who is calling: a bearer token (an HTTP `Authorization` header or gRPC metadata) to the
principal everything below is scoped by (`server.auth.tokens`)."""

from __future__ import annotations

import hmac

from core.settings import Settings

ANONYMOUS = "anonymous"


class Principals:
    def __init__(self, settings: Settings) -> None:
        self._tokens = [
            (t.token.get_secret_value().encode(), t.principal) for t in settings.server.auth.tokens
        ]

    @property
    def required(self) -> bool:
        return bool(self._tokens)

    def of(self, header: str | None) -> str | None:
        """The principal of an `Authorization: Bearer <token>` value, None when it is wrong.

        Every configured token is compared, in constant time, whatever matches first."""
        if not self._tokens:
            return ANONYMOUS
        scheme, _, presented = (header or "").partition(" ")
        if scheme.lower() != "bearer" or not presented.strip():
            return None
        given = presented.strip().encode()
        found = None
        for token, principal in self._tokens:
            if hmac.compare_digest(token, given) and found is None:
                found = principal
        return found
