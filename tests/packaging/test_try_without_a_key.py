"""The README's "Try it without a key": the project's mock Anthropic model, started with one
command, and the shipped Claude config pointed at it by the environment it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.packaging.support import REPO, Served, answer_text, send_message
from tests.packaging.test_configs_side_by_side import EXE, user_env


def test_claude_against_the_mock_model(tmp_path: Path) -> None:
    mock = subprocess.Popen(
        [sys.executable, "-m", "harness.mock_models", "anthropic"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert mock.stdout is not None
        mock.stdout.readline()
        exports = mock.stdout.readline().split()
        assert exports[0] == "export", exports
        env = {**user_env(tmp_path), **dict(v.split("=", 1) for v in exports[1:])}
        env["CLAUDE_WORKDIR"] = str(tmp_path)
        served = Served([str(EXE), "serve", "config/claude.json", "--port", "0"], REPO, env)
        try:
            task = send_message(served.url, "Say hello")
        finally:
            served.stop()
    finally:
        mock.terminate()
        mock.communicate(timeout=30)

    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task["status"]
    assert answer_text(task)
