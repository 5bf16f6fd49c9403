"""a2a-wrapper: serve a CLI coding agent as an A2A agent (`a2a-wrapper serve CONFIG`)."""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import structlog

from core import DISTRIBUTION, installed_version, logs, registry
from core.agents import npm as npm_agents
from core.api import conversation_control
from core.api.card import CardProvider
from core.backend import Backend, Diagnosis
from core.backend.config import AgentBlock, working_directory_check
from core.client import commands as client_commands
from core.client import control
from core.daemon import build_hooks, check_storage, serve
from core.engine.policy import HookLoadError
from core.engine.startup import ListenError, StartupError, StorageStartError, one_line
from core.instance.lock import StorageLockError
from core.settings import ConfigError, Settings, json_schema, load
from core.settings.jails import diagnose as sandbox_check
from core.settings.sections import storage_config, workspace_config
from core.settings.server import MIN_TOKEN_LENGTH
from core.storage.kinds import storage_for
from core.storage.postgres.schema import migrate_database
from core.wire import signing
from core.workspaces import report as workspace_report
from core.workspaces.manager import WorkspaceManager

EXIT_CONFIG = 2  # the config is unusable (also: an unknown backend, a hook that does not load)

log = structlog.get_logger(__name__)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="a2a-wrapper", description=__doc__)
    parser.add_argument(
        "--version", action="version", version=f"a2a-wrapper {installed_version()} ({DISTRIBUTION})"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the A2A daemon for one coding agent")
    serve.add_argument("config", type=Path, help="JSON config file")
    serve.add_argument("--host", help="address to bind (overrides server.host)")
    serve.add_argument("--port", type=int, help="port to bind, 0 = any free port")
    serve.add_argument("--log-level", default="info", choices=["debug", "info", "warning"])
    serve.add_argument(
        "--log-format",
        default="auto",
        choices=["auto", "json", "console"],
        help="log lines on stderr: JSON (for a log collector), console (for people), or auto: "
        "console on a terminal, JSON otherwise",
    )
    check = commands.add_parser(
        "check", help="validate a config, check the agent (binary, credentials), show the card"
    )
    check.add_argument("config", type=Path)
    check.add_argument(
        "--quiet", action="store_true", help="print only what failed or warns (the exit code says)"
    )
    card = commands.add_parser(
        "card",
        help="print the agent card a config would serve (without the conversation-control "
        "extension, which needs the backend: `check` shows it)",
    )
    card.add_argument("config", type=Path)
    card.add_argument(
        "--strict", action="store_true", help="the strict v1.0 card (as sent to A2A-Version 1.x)"
    )
    card.add_argument(
        "--verify",
        action="store_true",
        help="check the card's signatures against the public halves of agentCard.signing's keys",
    )
    card.add_argument(
        "--card",
        dest="card_file",
        type=Path,
        help="with --verify: check this card (a JSON file, e.g. saved from a running daemon) "
        "instead of the one the config serves",
    )
    commands.add_parser("schema", help="print the JSON Schema of the config file")
    migrate = commands.add_parser(
        "migrate",
        help='apply the PostgreSQL schema migrations of storage.kind "postgres" and exit '
        "(a daemon applies them at start too)",
    )
    migrate.add_argument("config", type=Path)
    workspaces = commands.add_parser(
        "workspaces", help="list the workspaces (worktrees, copies) of a config's daemon"
    )
    workspaces.add_argument("config", type=Path)
    npm_agents.add_commands(commands)
    client_commands.register(commands)
    return parser


def _check(path: Path, *, quiet: bool = False) -> int:
    """Validate the config, ask the backend what it can see (binary, version, working
    directory, credentials: present or not, never their values), show the card it would serve.
    Exit 0 when everything is fine, 1 when a check failed, 2 when the config is unusable.
    `quiet`: only the failed checks and the warnings."""
    try:
        settings = load(path)
        backend = registry.create_backend(settings.backend, settings.backend_config())
        build_hooks(settings)
    except (ConfigError, registry.UnknownBackendError, HookLoadError) as exc:
        print(f"a2a-wrapper: {path}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if not quiet:
        print(f"{path}: config ok (backend {settings.backend})")
    sandbox, sandbox_warnings = sandbox_check(settings)
    results = [*_common_checks(settings), sandbox, *asyncio.run(backend.diagnose())]
    for item in results:
        if quiet and item.ok:
            continue
        mark = "ok  " if item.ok else "FAIL"
        print(f"  {mark} {item.name}: {item.detail}" if item.detail else f"  {mark} {item.name}")
    for key in settings.server.auth.short_tokens():
        print(f"  warn {key}: {_SHORT_TOKEN}")
    for warning in _workspace_warnings(settings):
        print(f"  warn workspace: {warning}")
    for warning in sandbox_warnings:
        print(f"  warn sandbox: {warning}")
    if not quiet:
        record = conversation_control.allowed(settings, backend).record()
        print("conversation control (what callers may use; the card's extension):")
        for what, value in control.summary(record):
            print(f"  {what}: {value}")
        print("agent card:")
        strict = not settings.agent_card.v03_fields
        print(json.dumps(_card(settings, strict=strict, backend=backend), indent=2))
    return 0 if all(item.ok for item in results) else 1


_SHORT_TOKEN = f"shorter than {MIN_TOKEN_LENGTH} characters; use a long random token"


def _common_checks(settings: Settings) -> list[Diagnosis]:
    checks = []
    block = settings.backend_block()
    if isinstance(block, AgentBlock):
        checks.append(working_directory_check(block))
    tokens = len(settings.server.auth.tokens)
    checks.append(
        Diagnosis(
            "auth",
            ok=True,
            detail=f"{tokens} bearer token(s)" if tokens else "none (loopback only)",
        )
    )
    checks.append(Diagnosis("budget", ok=True, detail=settings.budget.summary()))
    checks.append(
        workspace_report.diagnose(workspace_config(settings), settings.server.max_concurrent_turns)[
            0
        ]
    )
    return checks


def _workspace_warnings(settings: Settings) -> list[str]:
    return workspace_report.diagnose(
        workspace_config(settings), settings.server.max_concurrent_turns
    )[1]


def _workspaces(path: Path) -> int:
    """The workspaces the config's daemon keeps, with their size (from its state file)."""
    try:
        settings = load(path)
    except ConfigError as exc:
        print(f"a2a-wrapper: {path}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    if settings.storage.kind == "memory":
        print("storage.kind is memory: the daemon keeps no workspaces between runs")
        return 0
    try:
        check_storage(settings)
    except StorageStartError as exc:
        print(f"a2a-wrapper: {_where(exc, settings)}: {exc}", file=sys.stderr)
        return exc.exit_code

    async def listing() -> list[str]:
        store = storage_for(storage_config(settings)).workspaces
        await store.open()
        try:
            rows = await WorkspaceManager(workspace_config(settings), store).listing()
        finally:
            await store.close()
        return workspace_report.table(rows)

    for line in asyncio.run(listing()):
        print(line)
    return 0


def _card(settings: Settings, *, strict: bool, backend: Backend | None = None) -> dict[str, Any]:
    """The card a daemon of `settings` would serve, with what `backend` (not started) says it
    can do; without a backend (`card`, which imports no agent SDK) the conversation-control
    extension is left out."""
    capabilities = (
        None if backend is None else partial(conversation_control.allowed, settings, backend)
    )
    provider = CardProvider(settings, capabilities)
    return provider.document_for(provider.configured_base_url(), strict=strict)


def _print_card(path: Path, *, strict: bool) -> int:
    try:
        settings = load(path)
    except ConfigError as exc:
        print(f"a2a-wrapper: {path}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    print(json.dumps(_card(settings, strict=strict), indent=2))
    return 0


def _verify_card(path: Path, card_file: Path | None, *, strict: bool) -> int:
    """One line per signature; exit 0 when at least one is valid (as verifiers accept a
    card), 1 when none is, 2 when the config has no signing keys or the card is unreadable."""
    try:
        settings = load(path)
        card = json.loads(card_file.read_text()) if card_file else _card(settings, strict=strict)
    except (ConfigError, OSError, ValueError) as exc:
        print(f"a2a-wrapper: {card_file or path}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    config = settings.agent_card.signing
    if config is None:
        print(f"a2a-wrapper: {path}: agentCard.signing is not set: no key to verify with")
        return EXIT_CONFIG
    keys = {k.key_id: k.private_key.public_key() for k in config.signing_keys()}
    verdicts = signing.verify(card, keys)
    if not verdicts:
        print("FAIL the card has no signatures")
    for verdict in verdicts:
        print(f"{'ok  ' if verdict.valid else 'FAIL'} {verdict.key_id}: {verdict.reason}")
    return 0 if any(v.valid for v in verdicts) else 1


def _migrate(path: Path) -> int:
    """Exit 0 when the schema is up to date (or the storage needs none), 2 for an unusable
    config, the storage start-up code when the database cannot be reached or migrated."""
    try:
        settings = load(path)
    except ConfigError as exc:
        print(f"a2a-wrapper: {path}: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    storage = settings.storage
    if storage.kind != "postgres" or not storage.url:
        print(f'storage.kind is "{storage.kind}": its tables are created at start, nothing to do')
        return 0
    try:
        version, applied = asyncio.run(migrate_database(storage.url))
    except Exception as exc:  # noqa: BLE001 - any failure is one line for the operator
        print(f"a2a-wrapper: cannot migrate {storage.where()}: {one_line(exc)}", file=sys.stderr)
        return StorageStartError.exit_code
    done = f"applied {', '.join(map(str, applied))}" if applied else "nothing to apply"
    print(f"{storage.where()}: schema at version {version} ({done})")
    return 0


def _announce(url: str) -> None:
    print(f"a2a-wrapper listening on {url}", flush=True)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    except BrokenPipeError:
        # The reader went away (`a2a-wrapper check ... | head`): no traceback, and nothing
        # more is written to the closed pipe when Python flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _main(argv: list[str] | None) -> int:
    args = _parser().parse_args(argv)
    # Like uvicorn's --app-dir: a `module:attr` backend (or hook) may live in the working
    # directory; before the config is read, since reading it loads the backend's spec.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    if args.command in client_commands.NAMES:
        return client_commands.main(args)
    if args.command == "schema":
        print(json.dumps(json_schema(), indent=2))
        return 0
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "agents": npm_agents.run,
        "check": lambda a: _check(a.config, quiet=a.quiet),
        "migrate": lambda a: _migrate(a.config),
        "workspaces": lambda a: _workspaces(a.config),
        "card": _card_command,
        "serve": _serve,
    }
    return commands[args.command](args)


def _card_command(args: argparse.Namespace) -> int:
    if args.verify:
        return _verify_card(args.config, args.card_file, strict=args.strict)
    return _print_card(args.config, strict=args.strict)


def _serve(args: argparse.Namespace) -> int:
    logs.configure(args.log_level, args.log_format)
    overrides: dict[str, Any] = {"server": {}}
    if args.host is not None:
        overrides["server"]["host"] = args.host
    if args.port is not None:
        overrides["server"]["port"] = args.port
    try:
        settings = load(args.config, overrides=overrides)
        registry.require_sdk(settings.backend)
    except (ConfigError, registry.MissingExtraError) as exc:
        what = "config error: " if isinstance(exc, ConfigError) else ""
        print(f"a2a-wrapper: {what}{exc}", file=sys.stderr)
        return EXIT_CONFIG
    for key in settings.server.auth.short_tokens():
        log.warning("auth.short_token", key=key, min_length=MIN_TOKEN_LENGTH)
    _tune_gc()
    try:
        asyncio.run(serve(settings, _announce))
    except KeyboardInterrupt:
        return 130
    except StorageLockError as exc:
        print(f"a2a-wrapper: {exc}", file=sys.stderr)
        return StorageStartError.exit_code
    except (registry.UnknownBackendError, HookLoadError) as exc:
        print(f"a2a-wrapper: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    except StartupError as exc:
        print(f"a2a-wrapper: {_where(exc, settings)}: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


def _tune_gc() -> None:
    """The collector's settings for a long-lived server. Everything made while starting
    (modules, pydantic schemas, settings) lives as long as the process: frozen, so collections
    never walk it again. The first generation is collected every 50,000 allocations instead of
    700: a request makes a few thousand short-lived objects (models, dicts), and with the
    default each request paid for several collections, and every few hundred requests a full
    one over every task the memory store holds (measured: 10-15% of a SendMessage's CPU, and
    most of its p99; docs/performance.md). Reference cycles are still collected."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)


def _where(exc: StartupError, settings: Settings) -> str:
    """What failed, with the path or address it concerns (the cause's text may lack it)."""
    if isinstance(exc, StorageStartError):
        return f"{exc.what} at {settings.storage.where()}"
    if isinstance(exc, ListenError):
        return f"{exc.what} on {settings.server.host}:{settings.server.port}"
    return exc.what


if __name__ == "__main__":
    raise SystemExit(main())
