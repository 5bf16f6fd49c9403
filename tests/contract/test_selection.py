"""Capability-based case selection (targets.py): a target that lacks a capability collects no
case that needs it, and nothing is skipped for it; every built-in target collects every case.

The suite is collected for real, in a pytest subprocess, with one more target installed the way
a third-party package installs one: an entry point of the group `a2a_wrapper.contract_targets`
in a `*.dist-info` on the path."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

from tests.contract.targets import CAPABILITIES, TARGETS, targets_for
from tests.support.daemon import REPO

COLLECT = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]
LACKING = """\
import dataclasses

from tests.contract.targets import TARGETS

TARGET = dataclasses.replace(TARGETS[0], name="lacking", lacks=frozenset({"approvals"}))
"""


def collected(site: Path) -> dict[str, set[str]]:
    """`tests/contract` as pytest collects it with `site` on the path: target -> its cases
    (`file::function`)."""
    path = os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")])
    run = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [*COLLECT, "tests/contract"],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": path.rstrip(os.pathsep)},
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    cases: dict[str, set[str]] = defaultdict(set)
    for line in run.stdout.splitlines():
        if "::" in line and line.endswith("]"):
            case, _, target = line[:-1].rpartition("[")
            cases[target].add(case)
    return cases


@pytest.mark.timeout(60)
def test_a_target_lacking_a_capability_gets_no_case_that_needs_it(tmp_path: Path) -> None:
    site = tmp_path / "site"
    dist = site / "lacking_target-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: lacking-target\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        "[a2a_wrapper.contract_targets]\nlacking = lacking_target:TARGET\n"
    )
    (site / "lacking_target.py").write_text(LACKING)

    cases = collected(site)

    every = set().union(*cases.values())
    approvals = {c for c in every if c.startswith("tests/contract/test_approvals.py::")}
    assert len(approvals) >= 7, "the approval cases need `approvals`"
    for target in TARGETS:
        assert cases[target.name] == every, f"{target.name} runs every case"
    assert cases["lacking"] == every - approvals
    shell = "test_cancel_while_the_shell_tool_runs_stops_the_tool_and_the_context_goes_on"
    assert f"tests/contract/test_conversation.py::{shell}" in cases["lacking"], (
        "it keeps the cases that need only what it has"
    )


def test_a_case_may_only_need_a_known_capability() -> None:
    assert targets_for(CAPABILITIES) == TARGETS, "the built-ins lack nothing"
    with pytest.raises(ValueError, match="unknown capabilities"):
        targets_for({"telepathy"})
