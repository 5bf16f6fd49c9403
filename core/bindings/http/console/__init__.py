"""The web console: a way in for people, served by the daemon's HTTP binding at `/console`.

It reads and writes only through the daemon's Operations, for the principal signed in
(signin.py), like any other binding. On by default for a loopback bind (`console.enabled`).
"""

from __future__ import annotations

from aiohttp import web

from core.api.host import Host
from core.bindings.http.console.signin import PREFIX
from core.settings import Settings
from core.settings.server import is_loopback

CONSOLE = PREFIX


def console_enabled(settings: Settings) -> bool:
    enabled = settings.console.enabled
    return is_loopback(settings.server.host) if enabled is None else enabled


def add_console(app: web.Application, host: Host) -> None:
    from core.bindings.http.console.views import add_routes  # noqa: PLC0415 - only when on

    add_routes(app, host)
