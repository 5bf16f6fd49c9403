"""Readiness and start-up on the real daemon: `/ready` answers 503 JSON with a reason written
for the caller (a raising health check, a full disk), and a storage or backend that cannot
start gives one line on stderr and a documented exit code, not a traceback."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import EXE, MakeDaemon

UPSTREAM_TEXT = "Cannot connect to host 10.1.2.3:4096 ssl:default [Connect call failed]"
WAIT = 30.0  # s: a bound on waiting for the daemon


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 1 MiB filesystem (tmpfs), unmounted at teardown."""
    where = tmp_path / "disk"
    where.mkdir()
    mount = ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(where)]
    subprocess.run(mount, check=True, capture_output=True)  # noqa: S603 - fixed list, no shell
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)  # noqa: S603, S607 - as above


def tck(storage: Path, **extra: Any) -> dict[str, Any]:
    return {
        "backend": "tests.conformance.tck_backend:TckBackend",
        "storage": {"path": str(storage / "tasks.sqlite3")},
        **extra,
    }


def fill(disk: Path) -> Path:
    """Write to `disk` until it is full; the file to delete to free it again."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


def test_a_raising_health_check_is_503_json_with_the_reason_not_the_error(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    daemon = daemons(
        {
            "backend": "tests.support.faulty_backend:FaultyBackend",
            "storage": {"path": str(tmp_path / "tasks.sqlite3")},
            "options": {"healthError": UPSTREAM_TEXT},
        }
    )
    url = daemon.start()

    for path in ("/ready", "/healthz"):
        response = httpx.get(f"{url}{path}", timeout=WAIT)
        assert response.status_code == 503
        body = response.json()
        assert body["status"] == "unavailable"
        assert body["reason"] == "backend_check_failed"
        assert body["message"].startswith("The faulty backend's health check failed (")
        assert body["errorId"] in body["message"]
        assert "10.1.2.3" not in response.text
        assert "ConnectionResetError" not in response.text
    daemon.stop()
    log = daemon.log_path.read_text()
    assert body["errorId"] in log
    assert UPSTREAM_TEXT in log


def test_a_full_disk_makes_ready_503_until_space_is_free(
    small_disk: Path, daemons: MakeDaemon
) -> None:
    daemon = daemons(tck(small_disk))
    url = daemon.start()
    assert httpx.get(f"{url}/ready", timeout=WAIT).status_code == 200

    filler = fill(small_disk)
    response = httpx.get(f"{url}/ready", timeout=WAIT)

    assert response.status_code == 503, response.text
    body = response.json()
    assert body["reason"] == "storage_full"
    assert body["message"].startswith("The disk holding the task store is full")
    assert "Errno" not in response.text
    filler.unlink()
    assert httpx.get(f"{url}/ready", timeout=WAIT).status_code == 200
    assert daemon.stop() == 0


def operator_lines(stderr: str) -> list[str]:
    """What the operator reads: stderr without the structured log lines (JSON), which may come
    first (the daemon's instance line, a lowered open-file limit)."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("{")]


def test_a_backend_that_cannot_start_is_one_line_and_exit_4(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    missing = tmp_path / "no-such-dir"
    daemon = daemons(
        tck(tmp_path) | {"backend": "claude", "claude": {"workingDirectory": str(missing)}}
    )

    code, stdout, stderr = daemon.run_to_exit()

    assert code == 4, stderr
    assert "listening" not in stdout
    lines = operator_lines(stderr)
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    # ClaudeStartError's own text, which lists every problem it found.
    assert lines[0].startswith(
        f"a2a-wrapper: the backend cannot start: claude.workingDirectory {missing} does not exist"
    )


def test_an_unwritable_storage_path_is_one_line_and_exit_3(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    not_a_dir = tmp_path / "a-file"
    not_a_dir.write_text("")
    daemon = daemons(tck(not_a_dir))

    code, stdout, stderr = daemon.run_to_exit()

    assert code == 3, stderr
    assert "listening" not in stdout
    lines = operator_lines(stderr)
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert lines[0].startswith(
        f"a2a-wrapper: cannot open the storage at {not_a_dir / 'tasks.sqlite3'}: "
    )
    assert "Traceback" not in stderr
    assert os.path.isfile(not_a_dir)


def test_an_address_in_use_is_one_line_and_exit_5(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(tck(tmp_path)))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(  # noqa: S603 - fixed argument list, no shell
            [str(EXE), "serve", str(config), "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=WAIT,
            check=False,
        )
    assert done.returncode == 5, done.stderr
    lines = operator_lines(done.stderr)
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"a2a-wrapper: cannot listen on 127.0.0.1:{port}: ")
    assert "Traceback" not in done.stderr
