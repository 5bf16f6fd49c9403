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
from core.server.app import backend_config
from core.server.card import CardProvider
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
    check = commands.add_parser(
        "check", help="validate a config, check the agent (binary, credentials), show the card"
    )
    check.add_argument("config", type=Path)
    commands.add_parser("schema", help="print the JSON Schema of the config file")
    return parser


def _check(path: Path) -> int:
    """Validate the config, ask the backend what it can see (binary, version, working
    directory, credentials: present or not, never their values), show the card it would serve.
    Exit 0 when everything is fine, 1 when a check failed, 2 when the config is unusable."""
    try:
        settings = load(path)
        sys.path.insert(0, os.getcwd())
        backend = registry.create_backend(settings.backend, backend_config(settings))
    except (ConfigError, registry.UnknownBackendError) as exc:
        print(f"a2a-wrapper: {path}: {exc}", file=sys.stderr)
        return 2
    print(f"{path}: config ok (backend {settings.backend})")
    results = asyncio.run(backend.diagnose())
    for item in results:
        mark = "ok  " if item.ok else "FAIL"
        print(f"  {mark} {item.name}: {item.detail}" if item.detail else f"  {mark} {item.name}")
    server = settings.server
    base = server.public_url or f"http://{server.host}:{server.port}"
    card = CardProvider(settings).document_for(base, strict=not settings.agent_card.v03_fields)
    print("agent card:")
    print(json.dumps(card, indent=2))
    return 0 if all(item.ok for item in results) else 1


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
