"""The backend's lifecycle with the real CLI: start refusals, health, shutdown of the CLI and of
the backend's own tasks, the resume command, and killing what a CLI started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.backend import procfs
from core.backend.base import BackendUnavailableError
from tests.backends.copilot.conftest import ConfigFactory, cli_pids
from wrappers.copilot.backend import CopilotBackend
from wrappers.copilot.config import CopilotConfig


def backend(copilot_block: ConfigFactory, **overrides: Any) -> CopilotBackend:
    return CopilotBackend(CopilotConfig.model_validate(copilot_block(**overrides)))


async def test_start_refuses_a_missing_working_directory(
    copilot_block: ConfigFactory, tmp_path: Path
) -> None:
    missing = tmp_path / "gone"

    with pytest.raises(BackendUnavailableError, match=r"copilot\.workingDirectory") as caught:
        await backend(copilot_block, workingDirectory=str(missing)).start()

    assert str(missing) in str(caught.value)
    assert not cli_pids()


async def test_start_refuses_a_missing_cli_and_says_how_to_get_it(
    copilot_block: ConfigFactory, tmp_path: Path
) -> None:
    agent = backend(copilot_block, cliPath=str(tmp_path / "no-copilot"))

    with pytest.raises(BackendUnavailableError, match=r"copilot\.cliPath"):
        await agent.start()


async def test_health_follows_the_cli_and_aclose_stops_everything(
    copilot_block: ConfigFactory,
) -> None:
    agent = backend(copilot_block)
    assert not (await agent.health()).ok

    await agent.start()
    try:
        (pid,) = cli_pids()
        health = await agent.health()
        assert health.ok
        assert health.detail == "copilot CLI 1.0.102 running"
    finally:
        with anyio.fail_after(15):
            await agent.aclose()

    assert pid not in cli_pids()
    assert not (await agent.health()).ok
    await agent.aclose()  # idempotent


def test_the_resume_command_names_the_state_directory_when_it_is_not_the_users(
    copilot_block: ConfigFactory, tmp_path: Path
) -> None:
    own = backend(copilot_block)
    users = backend(copilot_block, home=None)

    home = tmp_path / "copilot-home"
    assert own.resume_command("abc") == f"COPILOT_HOME={home} copilot --resume abc"
    assert users.resume_command("abc") == "copilot --resume abc"


def test_killing_a_cli_also_kills_the_tools_it_started_in_their_own_sessions() -> None:
    # A stand-in for the CLI: it starts a long "tool" in a session of its own, as the CLI's
    # shell tool does, and reports its pid.
    starter = (
        "import subprocess, sys;"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        " start_new_session=True);"
        "print(p.pid, flush=True); p.wait()"
    )
    parent = subprocess.Popen(  # noqa: S603 - a fixed argument list, no shell
        [sys.executable, "-c", starter], stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        tool = int(parent.stdout.readline())

        procfs.kill_below(parent.pid, groups=True)

        # The stand-in only returns once its tool is gone (and reaped by it).
        parent.wait(timeout=10)
        assert not Path(f"/proc/{tool}").exists()
    finally:
        parent.kill()
        parent.wait()
        if parent.stdout is not None:
            parent.stdout.close()
