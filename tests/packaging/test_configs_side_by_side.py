"""The shipped configs run beside each other with no edits, and the first things a user runs
behave: only the configured backend's SDK is imported, logs in the format asked for, a
version error that says how to ask for 1.0. (In this checkout's venv, with every SDK.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from core.settings import load
from tests.packaging.support import REPO, SDK_MODULES, Served, answer_text, send_message

EXE = Path(sys.executable).with_name("a2a-wrapper")
SHIPPED = sorted(p for p in (REPO / "config").glob("*.json") if p.name != "schema.json")


def user_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("A2A_WRAPPER")}
    env.pop("XDG_STATE_HOME", None)
    env["HOME"] = str(home)
    return env


def test_each_shipped_config_has_its_own_port_and_storage_file(tmp_path: Path) -> None:
    environ = {"HOME": str(tmp_path)}
    settings = {p.stem: load(p, environ=environ) for p in SHIPPED}

    ports = {name: s.server.port for name, s in settings.items()}
    storage = {name: s.storage.resolved_path() for name, s in settings.items()}

    assert len(set(ports.values())) == len(ports), ports
    # The crew plans' agents (examples/crew: 127.0.0.1:8001-8004).
    assert [ports[n] for n in ("claude", "codex", "opencode", "copilot")] == [
        8001,
        8002,
        8003,
        8004,
    ]
    assert all(path.name == f"{name}.sqlite3" for name, path in storage.items()), storage
    assert len({path.parent for path in storage.values()}) == len(storage)


def test_two_shipped_configs_start_side_by_side(tmp_path: Path) -> None:
    """Unedited but for the port (0: this machine's 8000s may be taken by other tests)."""
    work = tmp_path / "repo"
    work.mkdir()
    env = {**user_env(tmp_path), "ECHO_WORKDIR": str(work), "CLAUDE_WORKDIR": str(work)}
    started = []
    try:
        for name in ("echo", "claude"):
            command = [str(EXE), "serve", str(REPO / "config" / f"{name}.json"), "--port", "0"]
            started.append(Served(command, tmp_path, env))
        task = send_message(started[0].url, "side by side")
        with urllib.request.urlopen(f"{started[1].url}/health", timeout=30) as health:  # noqa: S310
            claude_alive = health.status
    finally:
        codes = [served.stop() for served in started]

    assert answer_text(task) == "side by side"
    assert claude_alive == 200
    assert codes == [0, 0], [s.err for s in started]
    state = tmp_path / ".local" / "state" / "a2a-wrapper"
    assert (state / "echo" / "echo.sqlite3").is_file()
    assert (state / "claude" / "claude.sqlite3").is_file()


IMPORTED_SDKS = """
import sys
from core.cli import main
code = main(sys.argv[2:])
print("\\n" + repr(code), sorted(m for m in sys.argv[1].split(",") if m in sys.modules))
"""


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (["schema"], []),
        (["card", "config/claude.json"], []),
        (["check", "config/claude.json"], ["claude_agent_sdk"]),
        (["check", "config/gemini.json"], ["acp"]),
        (["check", "config/echo.json"], []),
    ],
)
def test_only_the_configured_backends_sdk_is_imported(
    tmp_path: Path, command: list[str], expected: list[str]
) -> None:
    done = subprocess.run(  # noqa: S603 - fixed argument list
        [sys.executable, "-c", IMPORTED_SDKS, ",".join(SDK_MODULES.values()), *command],
        cwd=REPO,
        env=user_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )

    last = done.stdout.rstrip().splitlines()[-1]
    assert last.split(" ", 1)[1] == repr(expected), done.stdout[-2000:] + done.stderr


@pytest.mark.parametrize("log_format", ["console", "json"])
def test_log_format(tmp_path: Path, log_format: str) -> None:
    env = {**user_env(tmp_path), "ECHO_WORKDIR": str(tmp_path)}
    command = [str(EXE), "serve", "config/echo.json", "--port", "0", "--log-format", log_format]
    served = Served(command, REPO, env)
    served.stop()

    first = served.err.splitlines()[0]
    assert first.startswith("{") == (log_format == "json"), served.err
    if log_format == "json":
        assert json.loads(first)["level"] == "info"


def test_the_version_error_says_a_missing_header_means_0_3(tmp_path: Path) -> None:
    env = {**user_env(tmp_path), "ECHO_WORKDIR": str(tmp_path)}
    served = Served([str(EXE), "serve", "config/echo.json", "--port", "0"], REPO, env)
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {}}
    request = urllib.request.Request(  # noqa: S310 - the daemon on 127.0.0.1
        f"{served.url}/a2a/jsonrpc",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            error = json.load(response)["error"]
    except urllib.error.HTTPError as exc:
        error = json.load(exc)["error"]
    finally:
        served.stop()

    assert error["code"] == -32009
    assert "without an A2A-Version header is 0.3" in error["message"]
    assert "send the header 'A2A-Version: 1.0'" in error["message"]
