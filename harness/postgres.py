"""A real PostgreSQL server for the tests: `initdb` in a temp directory, the postmaster on
127.0.0.1 (a free port) and on a unix socket in that directory only, stopped by its PID.

Debian's `postgresql` package puts the server binaries in /usr/lib/postgresql/<major>/bin,
which is not on PATH; `.ci/run` installs the package when it is absent. initdb refuses to run
as root, so as root the server's commands run as the `postgres` user (`runuser`), in a
directory that user owns. Authentication is `trust`: the server listens on loopback and a
socket in a private directory only, and lives as long as the test session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0
SERVER_USER = "postgres"


class PostgresUnavailableError(RuntimeError):
    """The PostgreSQL server binaries are not installed (`.ci/run` installs them)."""


def server_binaries() -> Path:
    """The folder holding initdb and postgres: PATH first, else Debian's newest major."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    majors = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    if not majors:
        raise PostgresUnavailableError(
            "PostgreSQL is not installed: apt-get install postgresql (what .ci/run does)"
        )
    return majors[-1].parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PostgresServer:
    """One server for the whole test session; `dsn(name)` points at one of its databases."""

    def __init__(self) -> None:
        self.bin = server_binaries()
        self.root = Path(tempfile.mkdtemp(prefix="a2a-pg-"))
        self.data = self.root / "data"
        self.port = 0
        self.pid: int | None = None
        self._as_root = os.geteuid() == 0

    def _run_as_server_user(self, argv: list[str]) -> list[str]:
        return ["runuser", "-u", SERVER_USER, "--", *argv] if self._as_root else argv

    def start(self) -> None:
        if self._as_root:
            shutil.chown(self.root, SERVER_USER)
        subprocess.run(  # noqa: S603 - fixed argument list, no shell
            self._run_as_server_user(
                [
                    str(self.bin / "initdb"),
                    "-D",
                    str(self.data),
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                    "--locale=C",
                ]
            ),
            check=True,
            capture_output=True,
        )
        self.port = free_port()
        self._launch()

    def _launch(self) -> None:
        log = self.root / "server.log"
        # The postmaster runs in the foreground of its own process, so its PID is ours to
        # stop; fsync off: a test server never needs to survive a power cut.
        with log.open("ab") as out:
            proc = subprocess.Popen(  # noqa: S603 - fixed argument list, no shell
                self._run_as_server_user(
                    [
                        str(self.bin / "postgres"),
                        "-D",
                        str(self.data),
                        "-c",
                        "listen_addresses=127.0.0.1",
                        "-c",
                        f"port={self.port}",
                        "-c",
                        f"unix_socket_directories={self.root}",
                        "-c",
                        "fsync=off",
                        "-c",
                        "synchronous_commit=off",
                        "-c",
                        "full_page_writes=off",
                        "-c",
                        "max_connections=300",
                    ]
                ),
                stdout=out,
                stderr=out,
                start_new_session=True,
            )
        self._runner = proc
        deadline = time.monotonic() + START_TIMEOUT
        pid_file = self.data / "postmaster.pid"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"postgres exited: {log.read_text()[-2000:]}")
            lines = pid_file.read_text().splitlines() if pid_file.exists() else []
            # The pid file's eighth line is the postmaster's status: "ready" once it accepts.
            if len(lines) >= 8 and lines[7].strip() == "ready" and _accepts(self.port):
                self.pid = int(lines[0])
                return
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"postgres did not start: {log.read_text()[-2000:]}")

    def halt(self) -> None:
        """Stop the postmaster (fast shutdown: every connection is cut), keeping its data
        and port for `resume` (a database outage)."""
        runner = self._runner
        os.kill(self.pid or runner.pid, signal.SIGINT)
        runner.wait(STOP_TIMEOUT)
        self.pid = None

    def resume(self) -> None:
        """Start the postmaster again after `halt`, on the same port and data."""
        self._launch()

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def stop(self) -> None:
        """SIGINT to the postmaster (PostgreSQL's fast shutdown), wait for it, then remove the
        directory; SIGKILL to its process group if it has not exited in time."""
        runner = getattr(self, "_runner", None)
        if runner is not None and runner.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid or runner.pid, signal.SIGINT)
            try:
                runner.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(runner.pid, signal.SIGKILL)
                runner.wait(STOP_TIMEOUT)
        shutil.rmtree(self.root, ignore_errors=True)


def _accepts(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def running_server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    try:
        server.start()
        yield server
    finally:
        server.stop()


_databases = iter(range(1, 1_000_000))


async def fresh_database(server: PostgresServer) -> str:
    """Create an empty database on `server` and return its DSN."""
    import asyncpg  # noqa: PLC0415 - the postgres extra, only where a test uses the server

    name = f"t{os.getpid()}_{next(_databases)}"
    admin = await asyncpg.connect(server.dsn())
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    return server.dsn(name)
