"""Capability-based case selection (targets.py): a target that lacks a capability collects no
case that needs it, and nothing is skipped for it; every built-in target collects every case
but what it lacks (opencode-acp: `quota`).

The suite is collected for real, in a pytest subprocess, with one more target installed the way
a third-party package installs one: an entry point of the group `a2a_wrapper.contract_targets`
in a `*.dist-info` on the path."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from tests.contract.targets import CAPABILITIES, TARGETS, targets_for, targets_lacking
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
    marks = {case: _marks(case) for case in every}
    for target in TARGETS:
        runs = {
            case
            for case, (needs, lacks) in marks.items()
            if not needs & target.lacks and lacks <= target.lacks
        }
        assert cases[target.name] == runs, f"{target.name} runs every case it can"
    assert cases["lacking"] == {c for c in every - approvals if not marks[c][1] - {"approvals"}}
    shell = "test_cancel_while_the_shell_tool_runs_stops_the_tool_and_the_context_goes_on"
    assert f"tests/contract/test_conversation.py::{shell}" in cases["lacking"], (
        "it keeps the cases that need only what it has"
    )


def _marks(case: str) -> tuple[frozenset[str], frozenset[str]]:
    """What a collected case needs and what it runs only without (its `needs`, `lacks`)."""
    path, _, name = case.partition("::")
    module = importlib.import_module(path.removesuffix(".py").replace("/", "."))
    found: dict[str, set[str]] = {"needs": set(), "lacks": set()}
    for holder in (module, getattr(module, name)):
        marks = getattr(holder, "pytestmark", [])
        for mark in marks if isinstance(marks, list) else [marks]:
            if mark.name in found:
                found[mark.name].update(mark.args)
    return frozenset(found["needs"]), frozenset(found["lacks"])


def test_a_case_may_only_need_a_known_capability() -> None:
    assert targets_for(set()) == TARGETS
    assert [t.name for t in targets_for({"quota"})] == [
        t.name for t in TARGETS if "quota" not in t.lacks
    ]
    assert [t.name for t in targets_lacking({"steer"})] == [
        t.name for t in TARGETS if "steer" in t.lacks
    ]
    assert set(CAPABILITIES) >= {"steer", "fork", "model", "readOnly"}
    with pytest.raises(ValueError, match="unknown capabilities"):
        targets_for({"telepathy"})
    with pytest.raises(ValueError, match="unknown capabilities"):
        targets_lacking({"telepathy"})
