"""Run the real `a2a-wrapper serve` as a subprocess (no shell), on 127.0.0.1 with --port 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
EXE = Path(sys.executable).with_name("a2a-wrapper")


class Daemon:
    def __init__(self, config: dict[str, Any], workdir: Path) -> None:
        self.config_path = workdir / "config.json"
        self.config_path.write_text(json.dumps(config))
        self.log_path = workdir / "daemon.log"
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> str:
        with self.log_path.open("a") as log:
            self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
                [str(EXE), "serve", str(self.config_path), "--port", "0"],
                cwd=REPO,
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                env={**os.environ, "PYTHONUNBUFFERED": "1"},
            )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("a2a-wrapper listening on http://127.0.0.1:"), line
        self.url = line.split()[-1]
        return self.url

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 15) -> int:
        assert self.proc is not None
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            if self.proc.stdout is not None:
                self.proc.stdout.close()

    def kill(self) -> None:
        self.stop(signal.SIGKILL)

    def close(self) -> None:
        """Make sure the process is gone (teardown; safe to call at any point)."""
        if self.proc is not None and self.proc.poll() is None:
            self.kill()


MakeDaemon = Callable[[dict[str, Any]], Daemon]


@contextmanager
def daemon_pool(workdir: Path) -> Iterator[MakeDaemon]:
    """Make daemons in `workdir`; each is stopped on exit, even when a test fails half-way."""
    made: list[Daemon] = []

    def make(config: dict[str, Any]) -> Daemon:
        made.append(Daemon(config, workdir))
        return made[-1]

    try:
        yield make
    finally:
        for daemon in made:
            daemon.close()
