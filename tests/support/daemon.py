"""Run the real `a2a-wrapper serve` as a subprocess (no shell), on 127.0.0.1 with --port 0."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
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

    def command(self) -> list[str]:
        return [str(EXE), "serve", str(self.config_path), "--port", "0"]

    def _launch(self, stderr: Any, open_files: int | None = None) -> subprocess.Popen[str]:
        limit: Callable[[], None] | None = None
        if open_files is not None:
            limit = lambda: resource.setrlimit(  # noqa: E731 - runs in the child, before exec
                resource.RLIMIT_NOFILE, (open_files, open_files)
            )
        return subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
            self.command(),
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            preexec_fn=limit,  # noqa: PLW1509 - only setrlimit, an async-signal-safe call
        )

    def start(self, *, open_files: int | None = None) -> str:
        """Start and wait until it listens. `open_files`: the daemon's RLIMIT_NOFILE (soft and
        hard, so it cannot raise it)."""
        with self.log_path.open("a") as log:
            self.proc = self._launch(log, open_files)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.startswith("a2a-wrapper listening on http://127.0.0.1:"), line
        self.url = line.split()[-1]
        return self.url

    def run_to_exit(self, timeout: float = 30) -> tuple[int, str, str]:
        """Start a daemon expected to exit before it listens: its exit code, stdout, stderr."""
        self.proc = self._launch(subprocess.PIPE)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        finally:
            self.close()
        return self.proc.returncode, out, err

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

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


class Daemons:
    """The daemons of one test: the first works in `root`, each later one in a folder of its
    own (its config and log); `close` makes sure every one is gone (teardown)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.made: list[Daemon] = []

    def __call__(self, config: dict[str, Any]) -> Daemon:
        workdir = self.root / f"daemon{len(self.made)}" if self.made else self.root
        workdir.mkdir(exist_ok=True)
        self.made.append(Daemon(config, workdir))
        return self.made[-1]

    def close(self) -> None:
        for daemon in self.made:
            daemon.close()
