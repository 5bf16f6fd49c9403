"""The HTTP binding: the daemon's HTTP app on a socket, under the connection guards."""

from __future__ import annotations

import asyncio
import resource

import anyio
import structlog
from aiohttp import web
from anyio.abc import TaskStatus

from core.api.host import Host
from core.api.ratelog import LogSummary
from core.bindings.http.app import http_app
from core.bindings.http.connections import ConnectionLimits, GuardedSite
from core.bindings.http.rest_common import MAX_REQUEST_LINE
from core.engine.startup import ListenError, failing_as
from core.settings.server import ServerSettings

log = structlog.get_logger(__name__)

# File descriptors kept for everything but client connections: the SQLite files, agent
# processes' pipes, outgoing webhook and agent API connections.
RESERVED_FDS = 128


def raise_open_file_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (what a daemon should run with) and
    return the soft limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            log.warning("daemon.nofile_not_raised", soft=soft, hard=hard)
    return soft


def connection_limits(server: ServerSettings, open_files: int) -> ConnectionLimits:
    """The configured caps, the total one lowered to what the open-file limit leaves, so a
    flood of connections can never take the descriptors the store and the agents need."""
    room = max(1, open_files - RESERVED_FDS)
    total = min(server.max_connections, room)
    if total < server.max_connections:
        log.warning(
            "server.max_connections_lowered",
            configured=server.max_connections,
            used=total,
            open_file_limit=open_files,
        )
    return ConnectionLimits(
        max_connections=total,
        max_per_client=server.max_connections_per_client,
        header_timeout=server.header_timeout / 1000,
    )


async def serve(host: Host, *, task_status: TaskStatus[list[str]]) -> None:
    """The daemon's HTTP binding: bind `server.host`:`server.port`, report the real URL (port
    0 resolved), serve until the daemon stops, then stop accepting and let the open requests
    end (up to `server.shutdownTimeout`; the daemon drains their turns meanwhile)."""
    settings = host.settings
    loop = asyncio.get_running_loop()
    summary = LogSummary()
    loop.set_exception_handler(summary.loop_exception_handler)
    open_files = raise_open_file_limit()
    runner = web.AppRunner(
        http_app(host),
        handle_signals=False,
        shutdown_timeout=settings.server.shutdown_timeout / 1000,
        keepalive_timeout=settings.server.keep_alive_timeout / 1000,
        logger=summary.logger("a2a_wrapper.http"),
        max_line_size=MAX_REQUEST_LINE,
    )
    await runner.setup()
    try:
        limits = connection_limits(settings.server, open_files)
        site = GuardedSite(runner, settings.server.host, settings.server.port, limits, summary)
        with failing_as(ListenError):
            await site.start()
        port = runner.addresses[0][1] if runner.addresses else settings.server.port
        host_name = settings.server.host
        shown = f"[{host_name}]" if ":" in host_name else host_name
        host.card.http_port = port
        task_status.started([f"http://{shown}:{port}"])
        await host.wait_stopping()
    finally:
        with anyio.CancelScope(shield=True):
            await runner.cleanup()
        summary.close()
