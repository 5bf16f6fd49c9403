"""The agent card route: `/.well-known/agent-card.json` (and the legacy `agent.json`).

URLs in the card follow the request's host (or `server.publicUrl`), so a daemon reached through
any address advertises an address that works. Caching: Cache-Control max-age, a weak ETag
(304 on If-None-Match) and Last-Modified (the time the daemon loaded its config).
"""

from __future__ import annotations

from datetime import UTC, datetime
from email.utils import format_datetime
from typing import Any

from aiohttp import web

from core.server.negotiation import request_version
from core.settings import Settings
from core.wire.card import JSONRPC_PATH, REST_PATH, Interface, card_document, etag
from core.wire.errors import VersionNotSupportedError

# First entry preferred. v0.3 shares the URLs: JSON-RPC tells dialects apart by method name,
# and v0.3 REST clients add `/v1/...` to the base themselves.
INTERFACES = [
    Interface(JSONRPC_PATH, "JSONRPC", "1.0"),
    Interface(REST_PATH, "HTTP+JSON", "1.0"),
    Interface(JSONRPC_PATH, "JSONRPC", "0.3"),
    Interface(REST_PATH, "HTTP+JSON", "0.3"),
]


def _asks_for_v1(request: web.Request) -> bool:
    try:
        return request_version(request)[0] >= 1
    except VersionNotSupportedError:
        return False


class CardProvider:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._loaded = datetime.now(UTC).replace(microsecond=0)
        self._card = settings.agent_card.model_dump(
            mode="json",
            by_alias=True,
            exclude_none=True,
            exclude={"max_age", "extensions", "v03_fields"},
        )
        self._extensions = [
            e.model_dump(mode="json", by_alias=True, exclude_none=True)
            for e in settings.agent_card.extensions
        ]

    @property
    def required_extensions(self) -> frozenset[str]:
        return frozenset(e.uri for e in self._settings.agent_card.extensions if e.required)

    def base_url(self, request: web.Request) -> str:
        server = self._settings.server
        if server.public_url:
            return server.public_url.rstrip("/")
        scheme, host = request.scheme, request.host
        if server.trust_forwarded_headers:
            scheme = request.headers.get("X-Forwarded-Proto", scheme).split(",")[0].strip()
            host = request.headers.get("X-Forwarded-Host", host).split(",")[0].strip()
        return f"{scheme}://{host}"

    def document(self, request: web.Request) -> dict[str, Any]:
        """The merged card for both generations, or the strict v1.0 card when the settings
        say so or the request itself declares A2A-Version 1.x (v1.0 schemas are closed)."""
        strict = not self._settings.agent_card.v03_fields or _asks_for_v1(request)
        return self.document_for(self.base_url(request), strict=strict)

    def document_for(self, base_url: str, *, strict: bool) -> dict[str, Any]:
        """The card as served at `base_url` (also what `a2a-wrapper check` shows)."""
        return card_document(
            self._card,
            base_url,
            INTERFACES,
            v03_fields=not strict,
            streaming=True,
            push_notifications=False,
            extended_card=False,
            extensions=self._extensions,
        )

    async def handle(self, request: web.Request) -> web.StreamResponse:
        doc = self.document(request)
        tag = etag(doc)
        headers = {
            "Cache-Control": f"public, max-age={self._settings.agent_card.max_age}",
            "ETag": tag,
            "Last-Modified": format_datetime(self._loaded, usegmt=True),
        }
        headers["Vary"] = "A2A-Version"
        if tag in {t.strip() for t in request.headers.get("If-None-Match", "").split(",")}:
            return web.Response(status=304, headers=headers)
        return web.json_response(doc, headers=headers)
