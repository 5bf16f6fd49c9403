"""The wheel and sdist, built once per test process from a copy of the sources (the build
writes an egg-info and a build/ folder; a copy keeps parallel builds out of the checkout)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.packaging.support import REPO

SOURCES = ("pyproject.toml", "README.md", "core", "wrappers")


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    source = tmp_path_factory.mktemp("source")
    for name in SOURCES:
        origin = REPO / name
        if origin.is_dir():
            shutil.copytree(origin, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(origin, source / name)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(  # noqa: S603 - fixed argument list
        [sys.executable, "-m", "build", "--outdir", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = out.glob("*.whl")
    (sdist,) = out.glob("*.tar.gz")
    return Dist(wheel, sdist)
