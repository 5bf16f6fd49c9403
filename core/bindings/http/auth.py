"""Who is calling: bearer tokens to principals, and the browser guards (Origin, Host).

Runs before any protocol handling. The public card and the health endpoints need no token;
everything else does when `server.auth.tokens` is set (otherwise every caller is the
`anonymous` principal, which the settings only allow on a loopback bind).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from core.api.principals import ANONYMOUS, Principals
from core.bindings.http.console.signin import same_origin
from core.settings import Settings
from core.settings.server import is_loopback

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

PRINCIPAL = web.RequestKey("principal", str)
REALM = 'Bearer realm="a2a-wrapper"'
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]", "::1")


class Authenticator:
    def __init__(
        self, settings: Settings, public_paths: frozenset[str], own_auth: str | None = None
    ) -> None:
        """`own_auth`: a path prefix whose routes sign their users in themselves (the web
        console's session cookie); its pages may be posted to from their own origin."""
        server = settings.server
        self._own_auth = own_auth
        self._principals = Principals(settings)
        self._public = public_paths
        self._origins = frozenset(o.rstrip("/") for o in server.allowed_origins)
        hosts = server.allowed_hosts
        if hosts is None and is_loopback(server.host):
            hosts = list(LOOPBACK_HOSTS)
        self._hosts = None if hosts is None else frozenset(h.lower() for h in hosts)

    @property
    def required(self) -> bool:
        return self._principals.required

    def principal_of(self, header: str | None) -> str | None:
        return self._principals.of(header)

    def _host_allowed(self, request: web.Request) -> bool:
        if self._hosts is None:
            return True
        host = (request.headers.get("Host") or "").lower()
        name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
        return host in self._hosts or name in self._hosts

    def _origin_allowed(self, request: web.Request) -> bool:
        origin = request.headers.get("Origin")
        return origin is None or origin.rstrip("/") in self._origins

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        if not self._host_allowed(request):
            return _refusal(
                421, "MISDIRECTED", "This Host is not served here (server.allowedHosts)"
            )
        if self._own_auth is not None and (
            request.path == self._own_auth or request.path.startswith(f"{self._own_auth}/")
        ):
            return await self._signing_in_itself(request, handler)
        if not self._origin_allowed(request):
            return _refusal(
                403, "PERMISSION_DENIED", "Browser origin not allowed (server.allowedOrigins)"
            )
        if request.path in self._public:
            request[PRINCIPAL] = ANONYMOUS
            return await handler(request)
        principal = self.principal_of(request.headers.get("Authorization"))
        if principal is None:
            missing = "Authorization" not in request.headers
            response = _refusal(
                401,
                "UNAUTHENTICATED",
                "A bearer token is required" if missing else "The bearer token is not valid",
            )
            response.headers["WWW-Authenticate"] = (
                REALM if missing else f'{REALM}, error="invalid_token"'
            )
            return response
        request[PRINCIPAL] = principal
        return await handler(request)

    async def _signing_in_itself(
        self, request: web.Request, handler: Handler
    ) -> web.StreamResponse:
        """A route that signs its users in itself: only the browser guard applies here."""
        if not (same_origin(request) or self._origin_allowed(request)):
            return _refusal(403, "PERMISSION_DENIED", "Cross-site request refused")
        return await handler(request)


def principal(request: web.Request) -> str:
    # The middleware sets it on every request; ANONYMOUS covers apps built without it.
    found: str = request.get(PRINCIPAL, ANONYMOUS)
    return found


def _refusal(status: int, code: str, message: str) -> web.Response:
    """Refused before any protocol handling: a google.rpc-style Status body."""
    return web.json_response(
        {"error": {"code": status, "status": code, "message": message}}, status=status
    )
