"""a2a-wrapper: CLI coding agents as A2A agents (docs/architecture.md)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

DISTRIBUTION = "a2a-wrapper-daemon"
"""The name this project is installed by (`pip install a2a-wrapper-daemon`); the command it
installs is `a2a-wrapper`. (`a2a-wrapper` on PyPI is another project.)"""


def installed_version() -> str:
    """The installed distribution's version ("unknown" when run from a bare source tree)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"
