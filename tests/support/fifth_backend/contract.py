"""The fifth backend as a target of the contract suite (tests/contract), installed the way any
backend package adds its own: `fifth = "tests.support.fifth_backend.contract:TARGET"` in the
entry-point group `a2a_wrapper.contract_targets`. It declares no conversation control, so it
lacks steer, fork, a per-message model and readOnly (their refusal cases run on it); every other
case runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from harness.mock_models.openai_chat import MODEL
from tests.contract.targets import BackendTarget, Places


def block(url: str, places: Places) -> dict[str, Any]:
    return {
        "baseUrl": url,
        "workingDirectory": str(places.work),
        "home": str(places.root / "fifth-home"),
        "model": MODEL,
    }


def approval_command(marker: Path) -> str:
    return f"echo ran > {marker} && echo ran-it"


def check_question(question: dict[str, Any], command: str, places: Places) -> None:
    assert question["summary"] == f"Run `{command}` in the working directory"
    assert question["detail"] == {"command": command, "cwd": str(places.work)}


TARGET = BackendTarget(
    name="fifth",
    resume="--session {}",
    mock="openai_chat",
    block=block,
    shell_tool="bash",
    # It runs every command in policy mode and asks for every one under `approvals.mode: ask`.
    approval_command=approval_command,
    marker_outside=False,
    check_question=check_question,
    lacks=frozenset({"steer", "fork", "model", "readOnly"}),
)
