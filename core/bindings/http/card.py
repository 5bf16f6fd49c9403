"""The agent card route: `/.well-known/agent-card.json` (and the legacy `agent.json`).

The card's URLs follow the request's host (or `server.publicUrl`). Caching: Cache-Control
max-age, a weak ETag (304 on If-None-Match) and Last-Modified (the time the daemon loaded its
config).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from email.utils import format_datetime
from typing import Any

from aiohttp import web

from core.api.card import CardProvider, CardView
from core.bindings.http.negotiation import request_version
from core.wire.card import etag
from core.wire.errors import VersionNotSupportedError


def _asks_for_v1(request: web.Request) -> bool:
    try:
        return request_version(request)[0] >= 1
    except VersionNotSupportedError:
        return False


def base_url(provider: CardProvider, request: web.Request) -> str:
    server = provider.settings.server
    if server.public_url:
        return server.public_url.rstrip("/")
    scheme, host = request.scheme, request.host
    if server.trust_forwarded_headers:
        scheme = request.headers.get("X-Forwarded-Proto", scheme).split(",")[0].strip()
        host = request.headers.get("X-Forwarded-Host", host).split(",")[0].strip()
    return f"{scheme}://{host}"


def card_document(provider: CardProvider, request: web.Request) -> dict[str, Any]:
    """The merged card for both generations, or the strict v1.0 card when the settings say
    so or the request itself declares A2A-Version 1.x (v1.0 schemas are closed)."""
    strict = not provider.settings.agent_card.v03_fields or _asks_for_v1(request)
    return provider.document_for(base_url(provider, request), strict=strict)


def card_view(provider: CardProvider, request: web.Request) -> CardView:
    return CardView(provider, base_url(provider, request))


def card_route(
    provider: CardProvider,
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    async def handle(request: web.Request) -> web.StreamResponse:
        doc = card_document(provider, request)
        tag = etag(doc)
        headers = {
            "Cache-Control": f"public, max-age={provider.settings.agent_card.max_age}",
            "ETag": tag,
            "Last-Modified": format_datetime(provider.loaded, usegmt=True),
        }
        headers["Vary"] = "A2A-Version"
        if tag in {t.strip() for t in request.headers.get("If-None-Match", "").split(",")}:
            return web.Response(status=304, headers=headers)
        return web.json_response(doc, headers=headers)

    return handle
