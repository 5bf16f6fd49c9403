"""Each agent extra alone, in a fresh venv: `schema` works and `check config/<agent>.json`
fails only on what a user must still provide (credentials; an npm CLI, naming
`a2a-wrapper agents install`), never on an import. And `uv tool install` of the wheel."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.packaging.conftest import Dist
from tests.packaging.support import (
    EXTRA_CONFIG,
    SDK_MODULES,
    UV,
    Served,
    Venv,
    answer_text,
    echo_config,
    requirement,
    send_message,
    uv_venv,
)

pytestmark = pytest.mark.timeout(1200)

# Which of the SDK modules (argv) the venv has (`google` alone is protobuf's namespace).
FIND_SDKS = """
import importlib.util, sys
def has(name):
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False
print([name for name in sys.argv[1:] if has(name)])
"""

# What a FAIL line of `check` may be about in a venv with no credentials and no npm CLIs.
USER_TO_PROVIDE = re.compile(
    r"credential|API key|api key|_API_KEY|logged in|login|token|auth|a2a-wrapper agents install",
)


@pytest.mark.parametrize("extra", sorted(EXTRA_CONFIG))
def test_one_extra_alone_fails_only_on_what_the_user_provides(
    dist: Dist, tmp_path: Path, extra: str
) -> None:
    venv = uv_venv(tmp_path / "venv", requirement(dist.wheel, extra))
    config = venv.shipped(EXTRA_CONFIG[extra])
    # The agent works in the user's repository (Codex refuses a directory outside git).
    subprocess.run(["git", "init", "--quiet", str(venv.work)], check=True)  # noqa: S603, S607

    schema = venv.run("schema")
    check = venv.run("check", str(config))
    sdks = venv.python_run(FIND_SDKS, *SDK_MODULES.values())

    assert schema.code == 0, schema.err
    assert "$schema" in json.loads(schema.out)
    assert sdks.out.strip() == repr([SDK_MODULES[extra]])  # this extra's SDK, no other
    assert check.code == 1, check.out + check.err
    assert "config ok" in check.out
    assert "Traceback" not in check.err
    assert "No module named" not in check.out + check.err
    failed = [line for line in check.out.splitlines() if line.lstrip().startswith("FAIL")]
    assert failed
    assert all(USER_TO_PROVIDE.search(line) for line in failed), failed


def test_uv_tool_install_of_the_wheel(dist: Dist, tmp_path: Path) -> None:
    tools = Venv(tmp_path / "tool")
    tools.env.update(
        {"UV_TOOL_DIR": str(tmp_path / "uv-tools"), "UV_TOOL_BIN_DIR": str(tmp_path / "bin")}
    )
    installed = tools.run("tool", "install", "--quiet", str(dist.wheel), executable=UV, timeout=900)
    command = tmp_path / "bin" / "a2a-wrapper"

    version = tools.run("--version", executable=command)
    schema = tools.run("schema", executable=command)
    check = tools.run("check", str(tools.shipped("echo")), executable=command)
    served = Served(
        [str(command), "serve", str(echo_config(tools.work, tools.home)), "--port", "0"],
        tools.work,
        tools.env,
    )
    try:
        task = send_message(served.url, "hello from uv tool")
    finally:
        stopped = served.stop()

    assert installed.code == 0, installed.out + installed.err
    assert version.out.strip() == "a2a-wrapper 0.1.0 (a2a-wrapper-daemon)"
    assert schema.code == 0
    assert json.loads(schema.out)["title"] == "a2a-wrapper daemon config"
    assert check.code == 0, check.out + check.err
    assert answer_text(task) == "hello from uv tool"
    assert stopped == 0, served.err
