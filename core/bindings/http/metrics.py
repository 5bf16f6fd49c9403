"""`/metrics`: the Prometheus exposition of core/usage/metrics.py, to loopback callers, or to
any caller with `metrics.token`."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable

from aiohttp import web

from core.settings import Settings
from core.settings.server import is_loopback
from core.usage.metrics import CONTENT_TYPE, METRICS_PATH, Metrics


def metrics_route(
    metrics: Metrics, settings: Settings
) -> Callable[[web.Request], Awaitable[web.Response]]:
    token = settings.metrics.token

    async def serve(request: web.Request) -> web.Response:
        if token is not None:
            given = request.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
                return web.json_response({"error": "metrics.token is required"}, status=401)
        elif not is_loopback(request.remote or ""):
            return web.json_response(
                {"error": "/metrics answers loopback callers only (or set metrics.token)"},
                status=403,
            )
        return web.Response(body=metrics.exposition(), headers={"Content-Type": CONTENT_TYPE})

    return serve


def observed_paths(settings: Settings) -> frozenset[str]:
    """Paths that skip the bearer check (they check access themselves)."""
    return frozenset({METRICS_PATH}) if settings.metrics.enabled else frozenset()
