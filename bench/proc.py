"""Servers under test as child processes: started, read for their URL, stopped by PID."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
DAEMON = str(Path(sys.executable).with_name("a2a-wrapper"))


class Server:
    """One server process. `url` is what it printed once it accepted connections."""

    def __init__(
        self, name: str, argv: list[str], log_path: Path, env: dict[str, str] | None = None
    ) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.env = env or {}
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    @property
    def pid(self) -> int:
        if self.proc is None:
            raise RuntimeError(f"{self.name} is not running")
        return self.proc.pid

    def start(self, timeout: float = 30) -> str:
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
                self.argv,
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={
                    **os.environ,
                    **self.env,
                    "PYTHONUNBUFFERED": "1",
                    "PYTHONPATH": str(REPO),
                },
            )
        if self.proc.stdout is None:
            raise RuntimeError("stdout is a pipe")
        with selectors.DefaultSelector() as sel:
            sel.register(self.proc.stdout, selectors.EVENT_READ)
            if not sel.select(timeout):
                self.stop()
                raise RuntimeError(f"{self.name} did not start in {timeout}s: {self.log_path}")
        line = self.proc.stdout.readline()
        if "http://" not in line:
            self.stop()
            raise RuntimeError(f"{self.name} failed to start ({line!r}): see {self.log_path}")
        self.url = line.split()[-1].rstrip("/")
        return self.url

    def rss_mib(self) -> float:
        """Resident set size now (Linux /proc)."""
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def cpu_seconds(self) -> float:
        """User + system CPU time the process has used so far."""
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self, timeout: float = 15) -> None:
        proc = self.proc
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        finally:
            if proc.stdout is not None:
                proc.stdout.close()


@contextmanager
def running(server: Server) -> Iterator[Server]:
    server.start()
    try:
        yield server
    finally:
        server.stop()


def daemon(
    name: str,
    workdir: Path,
    config: dict[str, Any],
    log_level: str = "info",
    env: dict[str, str] | None = None,
) -> Server:
    """The real `a2a-wrapper serve` with `config` (its backend importable from the repo) and
    `env` over this process's environment."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / f"{name}.json"
    path.write_text(json.dumps(config))
    argv = [DAEMON, "serve", str(path), "--port", "0", "--log-level", log_level]
    return Server(name, argv, workdir / f"{name}.log", env)


def module(name: str, workdir: Path, *args: str) -> Server:
    """`python -m bench.servers ...` or any other module of this repo."""
    workdir.mkdir(parents=True, exist_ok=True)
    return Server(name, [PYTHON, "-m", *args], workdir / f"{name}.log")
