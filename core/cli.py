"""`a2a-wrapper serve CONFIG [--host H] [--port P]`."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from pathlib import Path
from typing import Any

from aiohttp import web

from core import logs
from core.server.app import create_app
from core.settings import ConfigError, Settings, load


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="a2a-wrapper", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the A2A daemon for one coding agent")
    serve.add_argument("config", type=Path, help="JSON config file")
    serve.add_argument("--host", help="address to bind (overrides server.host)")
    serve.add_argument("--port", type=int, help="port to bind, 0 = any free port")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    return parser


async def serve(settings: Settings) -> None:
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
        print(f"a2a-wrapper listening on http://{shown}:{port}", flush=True)
        await stop.wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logs.configure(args.log_level)
    overrides: dict[str, Any] = {"server": {}}
    if args.host is not None:
        overrides["server"]["host"] = args.host
    if args.port is not None:
        overrides["server"]["port"] = args.port
    try:
        settings = load(args.config, overrides=overrides)
    except ConfigError as exc:
        print(f"a2a-wrapper: config error: {exc}", file=sys.stderr)
        return 2
    # Like uvicorn's --app-dir: a `module:attr` backend may live in the working directory.
    sys.path.insert(0, os.getcwd())
    try:
        asyncio.run(serve(settings))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
