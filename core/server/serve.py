"""Running the app on a socket until SIGINT/SIGTERM (the CLI's `serve`)."""

from __future__ import annotations

import asyncio
import os
import resource
import signal
from collections.abc import Callable

import structlog
from aiohttp import web

from core.instance.guard import guarded
from core.server.app import create_app
from core.server.connections import ConnectionLimits, GuardedSite
from core.server.keys import CARD
from core.server.ratelog import LogSummary
from core.server.rest_common import MAX_REQUEST_LINE
from core.server.storage import check_storage
from core.settings import Settings
from core.settings_server import ServerSettings
from core.tasks.startup import ListenError, failing_as

log = structlog.get_logger(__name__)


FORCED_EXIT = 130
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


async def serve(settings: Settings, on_listening: Callable[[str], None]) -> None:
    """Bind, report the real URL (port 0 resolved), and stop cleanly on a signal: stop
    accepting, let running turns finish up to `server.shutdownTimeout`, then stop them and the
    agents. A second signal exits at once, killing every agent process first. The whole run
    holds the storage lock (StorageInUseError when another daemon has it) and its process
    hygiene (`core.instance.guard`). A storage file that is not this daemon's is refused
    before anything is written (StorageStartError)."""
    check_storage(settings)
    async with guarded(settings.storage.local_path()) as guard:
        await _serve(settings, on_listening, guard.force_stop)


async def _serve(
    settings: Settings, on_listening: Callable[[str], None], force_stop: Callable[[], None]
) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()

    def on_signal() -> None:
        if stop.is_set():
            log.warning("daemon.forced_exit")
            force_stop()
            os._exit(FORCED_EXIT)
        log.info("daemon.stopping")
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, on_signal)
    summary = LogSummary()
    loop.set_exception_handler(summary.loop_exception_handler)
    open_files = raise_open_file_limit()
    runner = web.AppRunner(
        create_app(settings),
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
        host = settings.server.host
        shown = f"[{host}]" if ":" in host else host
        card = runner.app[CARD]
        card.http_port = port
        on_listening(f"http://{shown}:{port}")
        if card.grpc_port is not None and settings.server.grpc_port is not None:
            on_listening(f"grpc://{shown}:{card.grpc_port}")
        await stop.wait()
    finally:
        await runner.cleanup()
        summary.close()
