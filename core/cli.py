"""`a2a-wrapper serve CONFIG [--host H] [--port P]`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import Any

from core import logs
from core.server.serve import serve
from core.settings import ConfigError, load


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="a2a-wrapper", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the A2A daemon for one coding agent")
    serve.add_argument("config", type=Path, help="JSON config file")
    serve.add_argument("--host", help="address to bind (overrides server.host)")
    serve.add_argument("--port", type=int, help="port to bind, 0 = any free port")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    return parser


def _announce(url: str) -> None:
    print(f"a2a-wrapper listening on {url}", flush=True)


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
        asyncio.run(serve(settings, _announce))
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
