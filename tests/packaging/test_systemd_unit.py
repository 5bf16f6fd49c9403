"""deploy/systemd/a2a-wrapper@.service passes `systemd-analyze verify` with no warning, and
its hardening keeps the exposure `systemd-analyze security` scores at "OK" or better. Both
run offline on a root of their own: the system's units, the unit, and an executable where
ExecStart expects the installed command."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

from tests.packaging.support import REPO

UNIT = REPO / "deploy" / "systemd" / "a2a-wrapper@.service"
SYSTEM_UNITS = Path("/lib/systemd/system")


def analyze(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    analyzer = shutil.which("systemd-analyze")
    assert analyzer, "systemd-analyze is missing: apt-get install systemd (.ci/run does)"
    return subprocess.run(  # noqa: S603 - fixed argument list
        [analyzer, *args, f"--root={root}", "a2a-wrapper@claude.service"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def make_root(root: Path) -> Path:
    (root / "usr" / "lib" / "systemd").mkdir(parents=True)
    (root / "usr" / "lib" / "systemd" / "system").symlink_to(SYSTEM_UNITS)
    (root / "etc" / "systemd" / "system").mkdir(parents=True)
    shutil.copy(UNIT, root / "etc" / "systemd" / "system" / UNIT.name)
    command = root / "opt" / "a2a-wrapper" / "bin" / "a2a-wrapper"
    command.parent.mkdir(parents=True)
    command.write_text("#!/bin/sh\n")
    command.chmod(0o755)
    return root


def test_the_unit_verifies_with_no_warning(tmp_path: Path) -> None:
    done = analyze(make_root(tmp_path), "verify")

    assert done.returncode == 0, done.stderr
    assert done.stderr == "", done.stderr


def test_a_misspelt_key_would_be_seen(tmp_path: Path) -> None:
    root = make_root(tmp_path)
    unit = root / "etc" / "systemd" / "system" / UNIT.name
    unit.write_text(unit.read_text().replace("NoNewPrivileges=", "NoNewPrivilegez="))

    assert "Unknown key 'NoNewPrivilegez'" in analyze(root, "verify").stderr


def test_the_hardening_scores_ok(tmp_path: Path) -> None:
    done = analyze(make_root(tmp_path), "security", "--offline=yes", "--no-pager")

    score = re.search(r"Overall exposure level for \S+: (\d+\.\d+) (\w+)", done.stdout)
    assert score, done.stdout + done.stderr
    assert float(score.group(1)) <= 4.0, score.group(0)
