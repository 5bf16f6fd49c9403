"""Capability-based case selection (targets.py): a target that lacks a capability collects no
case that needs it, and nothing is skipped for it; every built-in target collects every case
but what it lacks (opencode-acp: `quota`).

The suite is collected for real, in a pytest subprocess, with one more target installed the way
a third-party package installs one: an entry point of the group `a2a_wrapper.contract_targets`
in a `*.dist-info` on the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.contract.targets import CAPABILITIES, TARGETS, targets_for
from tests.support import pytest_run

LACKING = """\
import dataclasses

from tests.contract.targets import TARGETS

TARGET = dataclasses.replace(TARGETS[0], name="lacking", lacks=frozenset({"approvals"}))
"""
ENTRY_POINTS = "[a2a_wrapper.contract_targets]\nlacking = lacking_target:TARGET\n"


@pytest.mark.timeout(60)
def test_a_target_lacking_a_capability_gets_no_case_that_needs_it(tmp_path: Path) -> None:
    site = pytest_run.install(
        tmp_path / "site", "lacking-target", ENTRY_POINTS, {"lacking_target.py": LACKING}
    )

    cases = pytest_run.collected(site, "tests/contract")

    every = set().union(*cases.values())
    approvals = {c for c in every if c.startswith("tests/contract/test_approvals.py::")}
    quota = {c for c in every if "used_up_quota" in c}
    assert len(approvals) >= 7, "the approval cases need `approvals`"
    assert len(quota) == 1, "the quota case needs `quota`"
    for target in TARGETS:
        lacked = quota if "quota" in target.lacks else set()
        assert cases[target.name] == every - lacked, f"{target.name} runs every case it can"
    assert cases["lacking"] == every - approvals
    shell = "test_cancel_while_the_shell_tool_runs_stops_the_tool_and_the_context_goes_on"
    assert f"tests/contract/test_conversation.py::{shell}" in cases["lacking"], (
        "it keeps the cases that need only what it has"
    )


def test_a_case_may_only_need_a_known_capability() -> None:
    lacking = [t.name for t in TARGETS if t.lacks]
    assert lacking == ["opencode-acp"], "the built-ins lack nothing but opencode-acp's quota"
    assert targets_for(set(CAPABILITIES) - {"quota"}) == TARGETS
    assert [t.name for t in targets_for({"quota"})] == [t.name for t in TARGETS if not t.lacks]
    with pytest.raises(ValueError, match="unknown capabilities"):
        targets_for({"telepathy"})
