"""Process hygiene of the real daemon process (issue 17, items 3 and 8): one daemon per
storage, and no agent process outlives it, however it stops, even with a backend that ignores
being stopped and agents whose tools escape into sessions of their own."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from core.backend import procfs
from tests.support.daemon import MakeDaemon
from tests.support.orphans import alive, await_file, await_gone, await_logged

V1 = {"A2A-Version": "1.0"}


@pytest.fixture
def strays() -> Iterator[list[int]]:
    """Pids a test saw; whatever still runs at teardown is killed (a failing test leaves
    nothing behind)."""
    seen: list[int] = []
    yield seen
    for pid in seen:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)


def rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(f"{url}/a2a/jsonrpc", json=body, headers=V1, timeout=10)
    result: dict[str, Any] = response.json()
    return result


def send(url: str, message_id: str) -> dict[str, Any]:
    params = {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        "configuration": {"returnImmediately": True},
    }
    task: dict[str, Any] = rpc(url, "SendMessage", params)["result"]["task"]
    return task


def stubborn(tmp_path: Path, **server: Any) -> dict[str, Any]:
    pids = tmp_path / "pids"
    pids.mkdir(exist_ok=True)
    return {
        "backend": "tests.support.process_backend:StubbornBackend",
        "options": {"pidDir": str(pids)},
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        "server": {"shutdownTimeout": 200, **server},
    }


def running_turn(tmp_path: Path, url: str, strays: list[int]) -> list[int]:
    """Start a turn of the stubborn backend; the pids of its agent and the agent's tool."""
    task = send(url, f"work-{uuid.uuid4().hex[:6]}")
    pids = [int(p) for p in await_file(tmp_path / "pids" / f"{task['id']}.pids").split()]
    strays.extend(pids)
    assert all(alive(pid) for pid in pids)
    return pids


# Item 3 -----------------------------------------------------------------------------------


def test_a_second_daemon_on_the_same_storage_refuses_to_start(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    config = {
        "backend": "tests.conformance.tck_backend:TckBackend",
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
    }
    first = daemons(config)
    url = first.start()
    running = send(url, "test-resubscribe-message-id-1")

    code, out, err = daemons(config).run_to_exit(timeout=20)

    assert code == 3  # a storage failure (docs/operations.md, Start-up failures)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(tmp_path / "tasks.sqlite3") in lines[0]
    assert f"another a2a-wrapper daemon (pid {first.pid})" in lines[0]
    # The first daemon's running task was not touched, and it still serves.
    task = rpc(url, "GetTask", {"id": running["id"]})["result"]
    assert task["status"]["state"] == "TASK_STATE_WORKING"
    assert first.stop() == 0


def test_a_storage_lock_that_cannot_be_created_is_one_line(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    (tmp_path / "not-a-folder").write_text("")
    storage = tmp_path / "not-a-folder" / "tasks.sqlite3"
    config = {
        "backend": "tests.conformance.tck_backend:TckBackend",
        "storage": {"path": str(storage)},
    }

    code, _, err = daemons(config).run_to_exit(timeout=20)

    assert code == 3  # a storage failure (docs/operations.md, Start-up failures)
    (line,) = err.strip().splitlines()
    assert line.startswith(
        f"a2a-wrapper: cannot open the storage at {storage}: cannot create its lock file "
    )


def test_memory_storage_takes_no_lock(tmp_path: Path, daemons: MakeDaemon) -> None:
    config = {"backend": "tests.conformance.tck_backend:TckBackend", "storage": {"kind": "memory"}}
    first, second = daemons(config), daemons(config)
    first.start()
    second.start()
    assert second.stop() == 0
    assert first.stop() == 0


# Item 8 -----------------------------------------------------------------------------------


def test_sigterm_stops_agents_a_backend_does_not_stop(
    tmp_path: Path, daemons: MakeDaemon, strays: list[int]
) -> None:
    daemon = daemons(stubborn(tmp_path))
    pids = running_turn(tmp_path, daemon.start(), strays)

    assert daemon.stop(signal.SIGTERM) == 0

    await_gone(pids)


def test_a_forced_exit_stops_every_agent_process(
    tmp_path: Path, daemons: MakeDaemon, strays: list[int]
) -> None:
    daemon = daemons(stubborn(tmp_path, shutdownTimeout=60_000))
    pids = running_turn(tmp_path, daemon.start(), strays)
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGTERM)
    await_logged(daemon, "daemon.stopping")

    assert daemon.stop(signal.SIGTERM) == 130

    await_gone(pids)


def test_the_next_start_stops_what_a_killed_daemon_left(
    tmp_path: Path, daemons: MakeDaemon, strays: list[int]
) -> None:
    daemon = daemons(stubborn(tmp_path))
    agent, tool = running_turn(tmp_path, daemon.start(), strays)

    daemon.kill()
    # The agent dies with the daemon (its parent-death signal); its detached tool does not.
    await_gone([agent])
    assert alive(tool)

    daemon.start()
    try:
        await_gone([tool])
        assert await_logged(daemon, "daemon.leftovers_stopped")["count"] == 1
    finally:
        daemon.stop()


@pytest.fixture
def sleepers() -> Iterator[Callable[[], procfs.ProcessInfo]]:
    """`sleep 1000` processes of the test's own (killed and reaped at teardown)."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> procfs.ProcessInfo:
        started.append(subprocess.Popen(["sleep", "1000"], start_new_session=True))  # noqa: S607
        info = procfs.read(started[-1].pid)
        assert info is not None
        return info

    yield start
    for process in started:
        process.kill()
        process.wait()


def test_the_start_cleanup_never_kills_a_recycled_pid(
    tmp_path: Path, daemons: MakeDaemon, sleepers: Callable[[], procfs.ProcessInfo]
) -> None:
    """A record whose start time matches is a leftover; one whose start time differs names a
    process that merely reuses the pid, and it is left alone."""
    storage = tmp_path / "tasks.sqlite3"
    daemon = daemons(stubborn(tmp_path))
    daemon.start()
    assert daemon.stop() == 0
    leftover, stranger = sleepers(), sleepers()
    me = procfs.read(os.getpid())
    assert me is not None
    with sqlite3.connect(storage) as conn:
        conn.execute(
            "INSERT INTO daemon_instances VALUES (?, ?, ?, ?)",
            ("killed-daemon", os.getpid(), me.start_time, procfs_boot_id()),
        )
        conn.executemany(
            "INSERT INTO daemon_processes VALUES (?, ?, ?, ?)",
            [
                ("killed-daemon", leftover.pid, leftover.pgid, leftover.start_time),
                ("killed-daemon", stranger.pid, stranger.pgid, stranger.start_time - 1),
            ],
        )
    conn.close()

    daemon.start()
    try:
        await_gone([leftover.pid])
        assert alive(stranger.pid)
        assert await_logged(daemon, "daemon.leftovers_stopped")["count"] == 1
    finally:
        daemon.stop()


def procfs_boot_id() -> str:
    return Path("/proc/sys/kernel/random/boot_id").read_text().strip()


def test_orphans_are_reparented_to_the_daemon_and_reaped(
    tmp_path: Path, daemons: MakeDaemon, strays: list[int]
) -> None:
    """The daemon is a child subreaper: a tool whose agent died becomes the daemon's child (not
    init's), so it is still below the daemon; once it exits, the daemon reaps it."""
    daemon = daemons(stubborn(tmp_path))
    agent, tool = running_turn(tmp_path, daemon.start(), strays)
    try:
        os.kill(agent, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while (info := procfs.read(tool)) is None or info.ppid != daemon.pid:
            assert time.monotonic() < deadline, f"the tool's parent is {info and info.ppid}"
            time.sleep(0.05)

        os.kill(tool, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while procfs.read(tool) is not None:
            assert time.monotonic() < deadline, "the exited tool was never reaped"
            time.sleep(0.05)
    finally:
        assert daemon.stop() == 0
