"""The wheel as a user installs it: `pip install` with no extras into a fresh venv, used from a
directory outside the checkout. Everything the core needs comes with it; every extra it lacks
is one line saying how to install it."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.packaging.conftest import Dist
from tests.packaging.support import (
    REPO,
    SDK_MODULES,
    Served,
    Venv,
    answer_text,
    echo_config,
    pip_venv,
    requirement,
    send_message,
)

pytestmark = pytest.mark.timeout(1200)

# Every core module, and the wrappers that need no SDK (echo, opencode) or are config only.
IMPORT_ALL = """
import importlib, importlib.util, pkgutil, sys
import core, wrappers
names = [m.name for m in pkgutil.walk_packages(core.__path__, "core.")]
names += [m.name for m in pkgutil.walk_packages(wrappers.__path__, "wrappers.")
          if m.name.split(".")[1] in ("echo", "opencode", "pins") or m.name.endswith(".config")]
for name in names:
    importlib.import_module(name)
sdks = sys.argv[1:]
print(len(names), [s for s in sdks if importlib.util.find_spec(s.partition(".")[0]) is not None
                   and importlib.util.find_spec(s) is not None])
"""


@pytest.fixture(scope="module")
def venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Venv:
    return pip_venv(tmp_path_factory.mktemp("core") / "venv", requirement(dist.wheel))


def test_the_wheel_holds_core_and_wrappers_only_and_the_sdist_builds(dist: Dist) -> None:
    names = zipfile.ZipFile(dist.wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    metadata = zipfile.ZipFile(dist.wheel).read(
        next(n for n in names if n.endswith(".dist-info/METADATA"))
    )
    headers = dict(line.split(": ", 1) for line in metadata.decode().splitlines() if ": " in line)

    assert tops == {"core", "wrappers", "a2a_wrapper_daemon-0.1.0.dist-info"}
    assert "wrappers/npm-agents.txt" in names
    assert "wrappers/echo/backend.py" in names
    # The schema of the card's conversation-control extension (core/api/conversation_control.py).
    assert "core/api/schemas/conversation-control.schema.json" in names
    assert headers["Name"] == "a2a-wrapper-daemon"
    assert headers["License-Expression"] == "Apache-2.0"
    with tarfile.open(dist.sdist) as sdist:
        assert "a2a_wrapper_daemon-0.1.0/PKG-INFO" in sdist.getnames()


def test_version(venv: Venv) -> None:
    run = venv.run("--version")

    assert run.code == 0
    assert run.out.strip() == "a2a-wrapper 0.1.0 (a2a-wrapper-daemon)"


def test_every_core_module_imports_with_the_core_dependencies_alone(venv: Venv) -> None:
    run = venv.python_run(IMPORT_ALL, *SDK_MODULES.values())

    assert run.code == 0, run.err
    count, installed_sdks = run.out.split(" ", 1)
    assert int(count) > 100
    assert installed_sdks.strip() == "[]"  # no agent SDK came in with the core


def test_schema_is_the_committed_one(venv: Venv) -> None:
    run = venv.run("schema")

    assert run.code == 0, run.err
    assert json.loads(run.out) == json.loads((REPO / "config" / "schema.json").read_text())


def test_check_passes_on_the_echo_config(venv: Venv) -> None:
    run = venv.run("check", str(venv.shipped("echo")))

    assert run.code == 0, run.out + run.err
    assert "config ok (backend echo)" in run.out
    assert "FAIL" not in run.out
    assert venv.run("check", "--quiet", str(venv.shipped("echo"))).out == ""


@pytest.mark.parametrize(
    ("config", "extra"),
    [
        ("claude", "claude"),
        ("copilot", "copilot"),
        ("antigravity", "antigravity"),
        ("gemini", "acp"),
    ],
)
def test_a_missing_extra_is_one_line_naming_the_install_command(
    venv: Venv, config: str, extra: str
) -> None:
    path = str(venv.shipped(config))

    for run in (venv.run("check", path), venv.run("serve", path, "--port", "0")):
        assert run.code == 2, run.out + run.err
        assert run.err.count("\n") == 1, run.err
        assert run.err.strip().endswith(f"pip install 'a2a-wrapper-daemon[{extra}]'"), run.err


def test_serve_answers_a_message_with_the_echo_agent(venv: Venv) -> None:
    config = echo_config(venv.work, venv.home / "state")
    served = Served([str(venv.command), "serve", str(config), "--port", "0"], venv.work, venv.env)
    try:
        task = send_message(served.url, "hello from a fresh venv")
    finally:
        code = served.stop()

    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert answer_text(task) == "hello from a fresh venv"
    assert code == 0, served.err
    assert "Traceback" not in served.err


def test_check_into_a_closed_pipe_prints_no_traceback(venv: Venv) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line (`check ... | head` finished)
    try:
        done = subprocess.run(  # noqa: S603 - fixed argument list
            [str(venv.command), "check", str(venv.shipped("echo"))],
            cwd=venv.work,
            env=venv.env,
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)

    assert done.stderr == ""
    assert done.returncode == 1


@pytest.fixture
def npm_cache(venv: Venv) -> Iterator[None]:
    """npm's cache of the machine (the venv's HOME is new): the CLI is fetched once."""
    venv.env["NPM_CONFIG_CACHE"] = os.environ.get("NPM_CONFIG_CACHE", str(Path.home() / ".npm"))
    yield
    venv.env.pop("NPM_CONFIG_CACHE")


@pytest.mark.usefixtures("npm_cache")
def test_agents_install_puts_the_pinned_cli_where_the_daemon_finds_it(venv: Venv) -> None:
    before = venv.run("check", str(venv.shipped("opencode")))
    assert before.code == 1
    assert "a2a-wrapper agents install opencode" in before.out

    installed = venv.run("agents", "install", "opencode", timeout=600)
    listing = venv.run("agents", "list")
    # A key in the environment, as a user has one: check says it is there (never its value).
    venv.env["ANTHROPIC_API_KEY"] = "sk-ant-not-a-real-key"
    try:
        after = venv.run("check", str(venv.shipped("opencode")))
    finally:
        venv.env.pop("ANTHROPIC_API_KEY")

    agents = venv.home / ".local" / "share" / "a2a-wrapper" / "agents"
    assert installed.code == 0, installed.out + installed.err
    assert f"opencode   opencode-ai@1.18.33          1.18.33 at {agents}" in listing.out
    assert "gemini     @google/gemini-cli@0.61.0    not installed" in listing.out
    assert after.code == 0, after.out + after.err
    assert str(agents) in after.out
