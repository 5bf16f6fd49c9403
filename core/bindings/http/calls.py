"""A request as a method handler sees it (core.api.calls.Call)."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from core.api.calls import Call
from core.bindings.http.auth import principal
from core.bindings.http.card import card_view
from core.bindings.http.keys import CARD, OPERATIONS


def call_for(request: web.Request, params: dict[str, Any]) -> Call:
    """The handler's view of a request: the operations, the caller, the params, the cards."""
    return Call(
        request.app[OPERATIONS], principal(request), params, card_view(request.app[CARD], request)
    )
