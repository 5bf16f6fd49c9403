"""Per-request protocol negotiation: the A2A-Version and A2A-Extensions headers."""

from __future__ import annotations

from aiohttp import web

from core.api.negotiation import check_extension_values
from core.wire.versions import Version, parse_version

EXTENSION_HEADERS = ("A2A-Extensions", "X-A2A-Extensions")


def request_version(request: web.Request) -> Version:
    """Header first (case-insensitive), then the `A2A-Version` query parameter (§3.6)."""
    value = request.headers.get("A2A-Version")
    if value is None:
        value = request.query.get("A2A-Version")
    return parse_version(value)


def check_extensions(request: web.Request, required: frozenset[str]) -> None:
    values = [v for name in EXTENSION_HEADERS for v in request.headers.getall(name, [])]
    check_extension_values(values, required)
