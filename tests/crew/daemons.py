"""`daemons`: one `a2a-wrapper serve CONFIG --port 0` per agent, each in a process group of its
own, its URL put into the environment variable the plan reads; all stopped by PID after. For
tests that need the daemons on ports of their own choosing (`crew serve`'s); the demo itself
starts its daemons with `python -m examples.crew up`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import IO

import anyio

from examples.crew.demo.phases import REPO, DemoAgent

EXE = Path(sys.executable).with_name("a2a-wrapper")
START_TIMEOUT = 60.0
STOP_TIMEOUT = 15.0


class DaemonStartError(Exception):
    pass


class DaemonProcess:
    """One `a2a-wrapper serve`, in a process group of its own, stopped by its PID."""

    def __init__(self, agent: DemoAgent, env: Mapping[str, str], log: Path) -> None:
        self.agent = agent
        self._env = dict(env)
        self._log_path = log
        self._log: IO[str] | None = None
        self.proc: subprocess.Popen[str] | None = None
        self.url = ""

    def start(self) -> str:
        self._log = self._log_path.open("w")
        self.proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
            [str(EXE), "serve", str(self.agent.config), "--port", "0"],
            cwd=REPO,
            env=self._env,
            stdout=subprocess.PIPE,
            stderr=self._log,
            stdin=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        if self.proc.stdout is None:
            raise DaemonStartError("no stdout pipe")
        line = self.proc.stdout.readline()
        if not line.startswith("a2a-wrapper listening on "):
            self.stop()
            log = self._log_path.read_text()[-2000:]
            raise DaemonStartError(
                f"daemon {self.agent.name} did not start ({line.strip()!r}):\n{log}"
            )
        self.url = line.split()[-1]
        return self.url

    def stop(self) -> int | None:
        """SIGTERM, wait up to STOP_TIMEOUT, then SIGKILL the daemon's process group."""
        proc = self.proc
        if proc is None:
            return None
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
        if self._log is not None:
            self._log.close()
        return proc.returncode


@asynccontextmanager
async def daemons(agents: list[DemoAgent], env: dict[str, str], logs: Path) -> AsyncIterator[None]:
    """Start every agent's daemon (its URL into `env[agent.url_env]`); stop them all after.
    Starting and stopping block, so they run in a thread: the mock models in this event loop
    must keep answering meanwhile."""
    started = [DaemonProcess(agent, env, logs / f"{agent.name}.log") for agent in agents]

    async def start(daemon: DaemonProcess) -> None:
        with anyio.fail_after(START_TIMEOUT):
            url = await anyio.to_thread.run_sync(daemon.start, abandon_on_cancel=True)
        env[daemon.agent.url_env] = url
        pid = daemon.proc.pid if daemon.proc else "?"
        print(
            f"demo: {daemon.agent.name}: {daemon.agent.intended_backend()} daemon, pid {pid}, "
            f"{url}",
            file=sys.stderr,
        )

    try:
        async with anyio.create_task_group() as tg:
            for daemon in started:
                tg.start_soon(start, daemon)
        yield
    finally:
        with anyio.CancelScope(shield=True):
            for daemon in reversed(started):
                code = await anyio.to_thread.run_sync(daemon.stop)
                print(f"demo: stopped {daemon.agent.name} (exit {code})", file=sys.stderr)
