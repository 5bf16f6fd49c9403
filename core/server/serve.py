"""Running the app on a socket until SIGINT/SIGTERM (the CLI's `serve`)."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable

from aiohttp import web

from core.server.app import create_app
from core.settings import Settings


async def serve(settings: Settings, on_listening: Callable[[str], None]) -> None:
    """Bind, report the real URL (port 0 resolved), and stop cleanly on a signal."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
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
