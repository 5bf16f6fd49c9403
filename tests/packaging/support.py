"""Installing the built wheel the way users do, and running its `a2a-wrapper` from a directory
that is not this checkout (so nothing of the clone can be imported by accident)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.support.wire import rpc, user_message

REPO = Path(__file__).resolve().parents[2]
UV = Path(sys.executable).with_name("uv")
DISTRIBUTION = "a2a-wrapper-daemon"
# The top-level modules of the agent SDKs (the extras), as `sys.modules` names them.
SDK_MODULES = {
    "claude": "claude_agent_sdk",
    "codex": "codex_cli_bin",
    "copilot": "copilot",
    "antigravity": "google.antigravity",
    "acp": "acp",
}
# The shipped config that each extra serves.
EXTRA_CONFIG = {
    "claude": "claude",
    "codex": "codex",
    "copilot": "copilot",
    "antigravity": "antigravity",
    "acp": "gemini",
}
INSTALL_TIMEOUT = 900


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def clean_env(home: Path) -> dict[str, str]:
    """The environment of a first-time user: a HOME of their own (state, the agents' data
    directory), no credentials, nothing of this checkout on PYTHONPATH."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "A2A_WRAPPER_AGENTS_DIR", "XDG_STATE_HOME")
    env = {k: v for k, v in os.environ.items() if k not in drop and not _credential(k)}
    env.update({"HOME": str(home), "XDG_DATA_HOME": str(home / ".local" / "share")})
    return env


def _credential(name: str) -> bool:
    return name.endswith(("_API_KEY", "_TOKEN", "_AUTH_TOKEN")) or name.startswith("A2A_WRAPPER__")


class Venv:
    """A virtual environment with the wheel installed, and a working directory outside the
    checkout to run its command from."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.work = root.parent / f"{root.name}-work"
        self.work.mkdir(parents=True, exist_ok=True)
        self.home = root.parent / f"{root.name}-home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.env = clean_env(self.home)

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def command(self) -> Path:
        return self.root / "bin" / "a2a-wrapper"

    def run(self, *args: str, timeout: float = 120, executable: Path | None = None) -> Run:
        done = subprocess.run(  # noqa: S603 - fixed argument lists
            [str(executable or self.command), *args],
            cwd=self.work,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        return Run(done.returncode, done.stdout, done.stderr)

    def python_run(self, source: str, *args: str) -> Run:
        return self.run("-c", source, *args, executable=self.python)

    def shipped(self, name: str) -> Path:
        """config/<name>.json copied next to the working directory, as a user would."""
        target = self.work / f"{name}.json"
        shutil.copy(REPO / "config" / f"{name}.json", target)
        return target


def pip_venv(root: Path, requirement: str) -> Venv:
    """python -m venv, then pip install (pip's cache makes repeats quick)."""
    subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, timeout=120)  # noqa: S603
    venv = Venv(root)
    _install([str(venv.python), "-m", "pip", "install", "--quiet", requirement], venv)
    return venv


def uv_venv(root: Path, requirement: str) -> Venv:
    """uv venv, then uv pip install (uv's cache: seconds, where pip takes a minute)."""
    subprocess.run([str(UV), "venv", "--quiet", str(root)], check=True, timeout=120)  # noqa: S603
    venv = Venv(root)
    _install(
        [str(UV), "pip", "install", "--quiet", "--python", str(venv.python), requirement], venv
    )
    return venv


def _install(command: list[str], venv: Venv) -> None:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("VIRTUAL_ENV", None)
    done = subprocess.run(  # noqa: S603 - fixed argument list
        command,
        cwd=venv.work,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, f"{' '.join(command)}:\n{done.stdout}\n{done.stderr}"


def requirement(wheel: Path, extra: str | None = None) -> str:
    """`NAME[extra] @ file:///...whl`: the wheel by its distribution name, as an index would be."""
    extras = f"[{extra}]" if extra else ""
    return f"{DISTRIBUTION}{extras} @ {wheel.as_uri()}"


def echo_config(where: Path, storage: Path) -> Path:
    """The shipped echo config, its storage in `storage`."""
    config = json.loads((REPO / "config" / "echo.json").read_text())
    config.pop("$schema")
    config["storage"] = {"path": str(storage / "echo.sqlite3")}
    config["echo"] = {"workingDirectory": str(where), "chunkDelay": 0}
    path = where / "echo.json"
    path.write_text(json.dumps(config))
    return path


def send_message(url: str, text: str) -> dict[str, Any]:
    """One blocking v1.0 JSON-RPC SendMessage; the task it returns."""
    message = user_message(text, messageId=os.urandom(8).hex())
    body = rpc("SendMessage", {"message": message})
    request = urllib.request.Request(  # noqa: S310 - the daemon on 127.0.0.1
        url.rstrip("/") + "/a2a/jsonrpc",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
    )
    with urllib.request.urlopen(request, timeout=60) as response:  # noqa: S310
        answer: dict[str, Any] = json.load(response)
    task: dict[str, Any] = answer["result"]["task"]
    return task


def answer_text(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


class Served:
    """`a2a-wrapper serve CONFIG --port 0` of a venv, until `stop`."""

    def __init__(self, command: list[str], cwd: Path, env: dict[str, str]) -> None:
        self.err = ""
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list
            command,
            cwd=cwd,
            env={**env, "PYTHONUNBUFFERED": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("a2a-wrapper listening on "):
            self.stop()
            raise AssertionError(f"the daemon did not start: {line}{self.err}")
        self.url = line.split()[-1]

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            _, self.err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, self.err = self.proc.communicate()
        return self.proc.returncode
