"""The pinned npm agent CLIs (`npm-agents.txt` beside this file), by agent name.

The one list of pins: `a2a-wrapper agents install` (through core's registry) and the
Makefile read the file, the backends their not-found messages from here.
"""

from __future__ import annotations

from importlib.resources import files

NPM_AGENTS: dict[str, str] = {
    name: spec
    for line in files(__package__).joinpath("npm-agents.txt").read_text("utf-8").splitlines()
    if line.strip() and not line.startswith("#")
    for name, spec in [line.split()]
}
"""Agent name -> the npm `package@version` it is installed from."""


def npm(name: str) -> str:
    """The pinned `package@version` of agent `name`."""
    return NPM_AGENTS[name]


def version(name: str) -> str:
    """The pinned version of agent `name`."""
    return npm(name).rpartition("@")[2]


def install_hint(name: str) -> str:
    """How a not-found message says to get the pinned CLI."""
    return f"{npm(name)} (`a2a-wrapper agents install {name}`; in a clone, `make`)"
