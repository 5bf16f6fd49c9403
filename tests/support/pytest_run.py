"""pytest run on part of this suite in a subprocess: a fresh collection, with a package
installed on its path (a folder of `*.dist-info`s and modules, as `pip install` leaves them)
for the run and for the daemons it starts."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

from tests.support.daemon import REPO

PYTEST = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"]


def install(
    site: Path, name: str, entry_points: str, modules: dict[str, str] | None = None
) -> Path:
    """`site` holding the distribution `name` with these entry points (and `modules`: file
    name -> source); `site` then."""
    dist = site / f"{name.replace('-', '_')}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)
    for file, source in (modules or {}).items():
        (site / file).write_text(source)
    return site


def run(site: Path, *args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    """`pytest args...` in the repository, with `site` first on the path, skips failing it."""
    path = os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")])
    env = {**os.environ, "PYTHONPATH": path.rstrip(os.pathsep), "A2A_WRAPPER_FAIL_ON_SKIP": "1"}
    return subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [*PYTEST, *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def by_target(node_ids: list[str]) -> dict[str, set[str]]:
    """Parametrized node ids (`file::case[target]`): target -> its cases."""
    cases: dict[str, set[str]] = defaultdict(set)
    for node_id in node_ids:
        if "::" in node_id and node_id.endswith("]"):
            case, _, target = node_id[:-1].rpartition("[")
            cases[target].add(case)
    return cases


def collected(site: Path, folder: str) -> dict[str, set[str]]:
    """What `folder` collects with `site` installed: target -> its cases."""
    done = run(site, "--collect-only", "-q", folder, timeout=50)
    assert done.returncode == 0, done.stdout + done.stderr
    return by_target(done.stdout.splitlines())


def passed(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The node ids a `-rA` run reports PASSED."""
    return [line.split()[1] for line in done.stdout.splitlines() if line.startswith("PASSED ")]
