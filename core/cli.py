"""`a2a-wrapper serve CONFIG [--host H] [--port P]`."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from core import logs, registry
from core.server.serve import serve
from core.settings import ConfigError, json_schema, load


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="a2a-wrapper", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the A2A daemon for one coding agent")
    serve.add_argument("config", type=Path, help="JSON config file")
    serve.add_argument("--host", help="address to bind (overrides server.host)")
    serve.add_argument("--port", type=int, help="port to bind, 0 = any free port")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    check = commands.add_parser("check", help="validate a config file and its backend name")
    check.add_argument("config", type=Path)
    commands.add_parser("schema", help="print the JSON Schema of the config file")
    return parser


def _check(path: Path) -> int:
    try:
        settings = load(path)
        sys.path.insert(0, os.getcwd())
        registry.resolve(settings.backend)
    except (ConfigError, registry.UnknownBackendError) as exc:
        print(f"a2a-wrapper: {path}: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: ok (backend {settings.backend})")
    return 0


def _announce(url: str) -> None:
    print(f"a2a-wrapper listening on {url}", flush=True)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "schema":
        print(json.dumps(json_schema(), indent=2))
        return 0
    if args.command == "check":
        return _check(args.config)
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
