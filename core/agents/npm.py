"""`a2a-wrapper agents install [NAME...|all]` and `a2a-wrapper agents list`: the pinned agent
CLIs that ship on npm only, installed with npm into the directory the daemon searches
(`core.backend.binaries.agents_directory()`). The agents with a Python SDK need only their
extra (`pip install 'NAME[extra]'`)."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from core import registry
from core.backend.binaries import AGENTS_DIR_VARIABLE, agents_directory

EXIT_FAILED = 1
EXIT_USAGE = 2


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    pins = registry.npm_agents()
    agents = commands.add_parser(
        "agents", help="install or list the pinned agent CLIs that ship on npm"
    )
    which = agents.add_subparsers(dest="agents_command", required=True)
    install = which.add_parser(
        "install",
        help=f"install pinned agent CLIs with npm into the directory the daemon searches "
        f"(${AGENTS_DIR_VARIABLE}, else ~/.local/share/a2a-wrapper/agents)",
    )
    install.add_argument("names", nargs="*", metavar="NAME", help=", ".join([*pins, "all"]))
    which.add_parser("list", help="show the pinned agent CLIs: installed or not, where, versions")


def run(args: argparse.Namespace) -> int:
    if args.agents_command == "list":
        return _list()
    return _install(args.names)


def _install(names: list[str]) -> int:
    pins = registry.npm_agents()
    if not names:
        print(f"a2a-wrapper: name an agent: {', '.join([*pins, 'all'])}", file=sys.stderr)
        return EXIT_USAGE
    unknown = [name for name in names if name not in pins and name != "all"]
    if unknown:
        known = ", ".join([*pins, "all"])
        print(f"a2a-wrapper: no agent CLI named {unknown[0]!r} (known: {known})", file=sys.stderr)
        return EXIT_USAGE
    chosen = list(pins) if "all" in names else list(dict.fromkeys(names))
    npm = shutil.which("npm")
    if npm is None:
        print(
            "a2a-wrapper: npm is not installed: install Node.js 20 or newer (with npm), "
            "then run this again",
            file=sys.stderr,
        )
        return EXIT_FAILED
    prefix = agents_directory()
    prefix.mkdir(parents=True, exist_ok=True)
    specs = [pins[name] for name in chosen]
    print(f"installing {' '.join(specs)} into {prefix}", flush=True)
    # Saved in the prefix's package.json, so a later install of another agent keeps this one.
    command = [npm, "install", "--prefix", str(prefix), "--save-exact", "--no-audit"]
    command += ["--no-fund", "--loglevel=error", *specs]
    done = subprocess.run(command, check=False)  # noqa: S603 - npm with our pinned names
    if done.returncode != 0:
        print(f"a2a-wrapper: npm install failed (exit {done.returncode})", file=sys.stderr)
        return EXIT_FAILED
    return _list(only=chosen)


def _list(only: list[str] | None = None) -> int:
    prefix = agents_directory()
    print(f"agent CLIs in {prefix}:")
    for name, spec in registry.npm_agents().items():
        if only is not None and name not in only:
            continue
        package, _, pinned = spec.rpartition("@")
        where = prefix / "node_modules" / package
        found = _installed_version(where)
        state = f"{found} at {where}" if found else "not installed"
        mismatch = f" (pinned {pinned})" if found and found != pinned else ""
        print(f"  {name:<10} {spec:<28} {state}{mismatch}")
    return 0


def _installed_version(package_dir: Path) -> str | None:
    try:
        manifest = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    found = manifest.get("version") if isinstance(manifest, dict) else None
    return found if isinstance(found, str) else None
