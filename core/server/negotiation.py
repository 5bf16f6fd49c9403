"""Per-request protocol negotiation: the A2A-Version and A2A-Extensions headers."""

from __future__ import annotations

from aiohttp import web

from core.wire.errors import ExtensionSupportRequiredError
from core.wire.versions import Version, parse_version


def request_version(request: web.Request) -> Version:
    """Header first (case-insensitive), then the `A2A-Version` query parameter (§3.6)."""
    value = request.headers.get("A2A-Version")
    if value is None:
        value = request.query.get("A2A-Version")
    return parse_version(value)


def requested_extensions(request: web.Request) -> frozenset[str]:
    uris: set[str] = set()
    for name in ("A2A-Extensions", "X-A2A-Extensions"):
        for value in request.headers.getall(name, []):
            uris.update(u.strip() for u in value.split(",") if u.strip())
    return frozenset(uris)


def check_extensions(request: web.Request, required: frozenset[str]) -> None:
    missing = sorted(required - requested_extensions(request))
    if missing:
        raise ExtensionSupportRequiredError(
            f"This agent requires extension(s): {', '.join(missing)}",
            metadata={"extensions": ",".join(missing)},
        )
