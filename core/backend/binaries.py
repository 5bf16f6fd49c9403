"""Where an agent's CLI binary is, found the same way for every backend: the configured path,
then the project's pinned install, then `PATH`.

Generic on purpose (core names no built-in agent): each wrapper passes its own pinned
candidates (an npm package installed under `PROJECT_TOOLS`, a binary a pinned wheel ships) and
the words of its not-found message.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

AGENTS_DIR_VARIABLE = "A2A_WRAPPER_AGENTS_DIR"


def agents_directory() -> Path:
    """Where the pinned npm agent CLIs are installed (an npm prefix): `$A2A_WRAPPER_AGENTS_DIR`
    when set; in a clone where `make` made `.tools`, that; else the user's data directory,
    `${XDG_DATA_HOME:-~/.local/share}/a2a-wrapper/agents` (`a2a-wrapper agents install`)."""
    override = os.environ.get(AGENTS_DIR_VARIABLE)
    if override:
        return Path(override).expanduser().absolute()
    clone = Path(__file__).resolve().parents[2] / ".tools"
    if clone.is_dir():
        return clone
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "a2a-wrapper" / "agents"


# The packages of the pinned npm agent CLIs (wrappers/npm-agents.txt), read once at import.
PROJECT_TOOLS = agents_directory() / "node_modules"


class CliNotFoundError(FileNotFoundError):
    """No usable binary. The message is written for the person running the daemon: it names
    every place tried and how to get the binary."""


@dataclass(frozen=True)
class CliSource:
    """How to talk about one agent's binary in a not-found message."""

    what: str  # "the acme CLI"
    key: str  # the config key (or variable) that names a binary: "acme.cliPath"
    install: str  # what the pinned install is, e.g. "@acme/cli@1.2.3 (`make`)"


def is_executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_cli(
    cli_path: Path | None,
    pinned_candidates: Iterable[Path | None],
    path_name: str,
    source: CliSource,
    *,
    search_path: str | None = None,
    usable: Callable[[Path], bool] = is_executable,
) -> Path:
    """The binary to run, as an absolute path: `cli_path` when given, else the first usable
    pinned candidate (None entries, a pinned install this platform lacks, are skipped), else
    `path_name` on `search_path` (None: the daemon's `PATH`).

    A given `cli_path` is the only candidate: when it is not usable this raises rather than run
    another binary than the one asked for. A bare name there (no directory) is looked up on the
    search path. Raises CliNotFoundError naming what was tried.
    """
    if cli_path is not None:
        path = cli_path.expanduser()
        if len(path.parts) == 1 and not path.is_file():
            found = shutil.which(str(path), path=search_path)
            path = Path(found) if found else path
        if usable(path):
            return path.absolute()
        raise CliNotFoundError(
            f"{source.what} was not found: {source.key} {path} is not an executable file; fix "
            f"{source.key}, or unset it to use {source.install} or `{path_name}` on PATH"
        )
    tried = [p for p in pinned_candidates if p is not None]
    for candidate in tried:
        if usable(candidate):
            return candidate.absolute()
    on_path = shutil.which(path_name, path=search_path)
    if on_path is not None and usable(Path(on_path)):
        return Path(on_path).absolute()
    looked = "".join(f"{p}, " for p in tried)
    raise CliNotFoundError(
        f"{source.what} was not found: looked at {looked}then for `{path_name}` on PATH; "
        f"install {source.install}, or set {source.key}"
    )
