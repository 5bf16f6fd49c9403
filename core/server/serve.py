"""Running the app on a socket until SIGINT/SIGTERM (the CLI's `serve`)."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Callable

import structlog
from aiohttp import web

from core.instance.guard import guarded
from core.server.app import create_app
from core.settings import Settings

log = structlog.get_logger(__name__)


FORCED_EXIT = 130


async def serve(settings: Settings, on_listening: Callable[[str], None]) -> None:
    """Bind, report the real URL (port 0 resolved), and stop cleanly on a signal: stop
    accepting, let running turns finish up to `server.shutdownTimeout`, then stop them and the
    agents. A second signal exits at once, killing every agent process first. The whole run
    holds the storage lock (StorageInUseError when another daemon has it) and its process
    hygiene (`core.instance.guard`)."""
    storage = settings.storage
    async with guarded(storage.resolved_path() if storage.kind == "sqlite" else None) as guard:
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
    runner = web.AppRunner(
        create_app(settings),
        handle_signals=False,
        shutdown_timeout=settings.server.shutdown_timeout / 1000,
    )
    await runner.setup()
    try:
        site = web.TCPSite(runner, settings.server.host, settings.server.port)
        await site.start()
        port = runner.addresses[0][1] if runner.addresses else settings.server.port
        host = settings.server.host
        shown = f"[{host}]" if ":" in host else host
        on_listening(f"http://{shown}:{port}")
        await stop.wait()
    finally:
        await runner.cleanup()
