"""Reading request bodies: Content-Type first, then the size limit, then the bytes."""

from __future__ import annotations

from aiohttp import web

from core.bindings.http.keys import SETTINGS
from core.wire.errors import ContentTypeNotSupportedError, PayloadTooLargeError

JSON_TYPES = frozenset({"application/json", "application/a2a+json"})


def check_json_content_type(request: web.Request) -> None:
    """A missing Content-Type is tolerated; anything but JSON is refused before parsing."""
    if "Content-Type" not in request.headers:
        return
    if request.content_type not in JSON_TYPES:
        raise ContentTypeNotSupportedError(
            f"Content-Type {request.content_type!r} is not supported; use application/json"
        )


async def read_json_body(request: web.Request) -> bytes:
    """The raw body; an absent body is empty and needs no Content-Type (e.g. `:cancel`)."""
    if not request.body_exists:
        return b""
    check_json_content_type(request)
    limit = request.app[SETTINGS].server.max_body_bytes
    if request.content_length is not None and request.content_length > limit:
        raise PayloadTooLargeError(f"Request body too large: the limit is {limit} bytes")
    try:
        return await request.read()
    except web.HTTPRequestEntityTooLarge as exc:
        raise PayloadTooLargeError(f"Request body too large: the limit is {limit} bytes") from exc
