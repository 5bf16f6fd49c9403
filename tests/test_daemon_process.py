"""The real daemon process: CLI, SIGTERM/SIGINT, and SQLite durability across restarts."""

from __future__ import annotations

import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import EXE, MakeDaemon
from tests.support.orphans import alive, await_file, await_gone

V1 = {"A2A-Version": "1.0"}


def _config(tmp_path: Path) -> dict[str, Any]:
    return {
        "backend": "tests.conformance.tck_backend:TckBackend",
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
    }


def _rpc(url: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(f"{url}/a2a/jsonrpc", json=body, headers=V1, timeout=10)
    result: dict[str, Any] = response.json()
    return result


def _message(message_id: str, **extra: Any) -> dict[str, Any]:
    return {
        "message": {"messageId": message_id, "role": "ROLE_USER", "parts": [{"text": "hi"}]},
        **extra,
    }


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_prints_url_and_stops_cleanly(tmp_path: Path, daemons: MakeDaemon, sig: int) -> None:
    daemon = daemons(_config(tmp_path))
    url = daemon.start()
    card = httpx.get(f"{url}/.well-known/agent-card.json", timeout=10).json()
    assert card["supportedInterfaces"][0]["url"] == f"{url}/a2a/jsonrpc"
    assert daemon.stop(sig) == 0


def test_bad_config_names_the_key(tmp_path: Path) -> None:
    config = tmp_path / "bad.json"
    config.write_text('{"backend": "x", "server": {"prot": 1}}')
    done = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "serve", str(config)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 2
    assert "server.prot: unknown key" in done.stderr


def test_tasks_survive_restart_and_running_tasks_fail(tmp_path: Path, daemons: MakeDaemon) -> None:
    daemon = daemons(_config(tmp_path))
    url = daemon.start()
    done = _rpc(url, "SendMessage", _message("tck-complete-task-1"))["result"]["task"]
    assert done["status"]["state"] == "TASK_STATE_COMPLETED"
    running = _rpc(
        url,
        "SendMessage",
        _message("test-resubscribe-message-id-1", configuration={"returnImmediately": True}),
    )["result"]["task"]
    waiting = _rpc(url, "SendMessage", _message("other-1"))["result"]["task"]
    assert waiting["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    daemon.kill()

    url = daemon.start()
    try:
        again = _rpc(url, "GetTask", {"id": done["id"]})["result"]
        assert again == done
        failed = _rpc(url, "GetTask", {"id": running["id"]})["result"]
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        assert "restarted" in failed["status"]["message"]["parts"][0]["text"]
        # An interrupted task was not running: it survives and can still be continued.
        resumed = _rpc(
            url,
            "SendMessage",
            _message(
                "tck-complete-task-2",
            ),
        )
        assert resumed["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        reply = _rpc(
            url,
            "SendMessage",
            {
                "message": {
                    "messageId": "tck-complete-task-3",
                    "role": "ROLE_USER",
                    "taskId": waiting["id"],
                    "parts": [{"text": "go on"}],
                }
            },
        )
        assert "result" in reply, reply
        follow = reply["result"]["task"]
        assert follow["id"] == waiting["id"]
        assert follow["status"]["state"] == "TASK_STATE_COMPLETED"
    finally:
        assert daemon.stop() == 0


def test_graceful_stop_fails_running_task_with_reason(tmp_path: Path, daemons: MakeDaemon) -> None:
    daemon = daemons({**_config(tmp_path), "server": {"shutdownTimeout": 200}})
    url = daemon.start()
    running = _rpc(
        url,
        "SendMessage",
        _message("test-resubscribe-message-id-2", configuration={"returnImmediately": True}),
    )["result"]["task"]
    assert daemon.stop() == 0
    url = daemon.start()
    try:
        failed = _rpc(url, "GetTask", {"id": running["id"]})["result"]
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        assert "shut down" in failed["status"]["message"]["parts"][0]["text"]
    finally:
        daemon.stop()


def test_graceful_stop_lets_a_short_turn_finish(tmp_path: Path, daemons: MakeDaemon) -> None:
    daemon = daemons({**_config(tmp_path), "server": {"shutdownTimeout": 10_000}})
    url = daemon.start()
    # Not a TCK message id: the conformance backend works 0.2 s, then asks for input.
    short = _rpc(url, "SendMessage", _message("short", configuration={"returnImmediately": True}))
    assert daemon.stop() == 0
    url = daemon.start()
    try:
        task = _rpc(url, "GetTask", {"id": short["result"]["task"]["id"]})["result"]
        assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    finally:
        daemon.stop()


def test_sigterm_during_a_turn_leaves_no_agent_process(tmp_path: Path, daemons: MakeDaemon) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    config = {
        "backend": "tests.support.process_backend:ProcessBackend",
        "options": {"pidDir": str(pids)},
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        "server": {"shutdownTimeout": 300},
    }
    daemon = daemons(config)
    url = daemon.start()
    task = _rpc(url, "SendMessage", _message("work", configuration={"returnImmediately": True}))
    task_id = task["result"]["task"]["id"]
    child = int(await_file(pids / f"{task_id}.pid"))
    assert alive(child)

    assert daemon.stop(signal.SIGTERM) == 0

    assert not alive(child)
    url = daemon.start()
    try:
        failed = _rpc(url, "GetTask", {"id": task_id})["result"]
        assert failed["status"]["state"] == "TASK_STATE_FAILED"
        assert "server.shutdownTimeout" in failed["status"]["message"]["parts"][0]["text"]
    finally:
        daemon.stop()


def test_a_second_signal_forces_exit(tmp_path: Path, daemons: MakeDaemon) -> None:
    pids = tmp_path / "pids"
    pids.mkdir()
    config = {
        "backend": "tests.support.process_backend:ProcessBackend",
        "options": {"pidDir": str(pids)},
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        "server": {"shutdownTimeout": 60_000},
    }
    daemon = daemons(config)
    url = daemon.start()
    task = _rpc(url, "SendMessage", _message("work", configuration={"returnImmediately": True}))
    child = int(await_file(pids / f"{task['result']['task']['id']}.pid"))
    assert daemon.proc is not None
    daemon.proc.send_signal(signal.SIGTERM)
    _await_text(daemon.log_path, "daemon.stopping")

    assert daemon.stop(signal.SIGTERM, timeout=10) == 130
    # Forced: the daemon killed its agent processes before it exited.
    await_gone([child])


def _await_text(path: Path, text: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text():
        assert time.monotonic() < deadline, f"{text!r} never logged"
        time.sleep(0.05)


def test_check_and_schema_commands(tmp_path: Path) -> None:
    ok = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "check", "tests/conformance/tck.json"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert "  ok   backend: in-process, nothing to check" in ok.stdout
    assert '"supportedInterfaces"' in ok.stdout
    bad = tmp_path / "bad.json"
    bad.write_text('{"backend": "nope"}')
    failed = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "check", str(bad)], capture_output=True, text=True, timeout=30, check=False
    )
    assert failed.returncode == 2
    assert "unknown backend 'nope'" in failed.stderr
    schema = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "schema"], capture_output=True, text=True, timeout=30, check=True
    )
    assert '"additionalProperties": false' in schema.stdout


def _raw_get(url: str, target: str) -> bytes:
    """Send `GET target` on a socket of its own and read what comes back (b"" on a reset)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    request = f"GET {target} HTTP/1.1\r\nHost: {host}\r\nA2A-Version: 1.0\r\n\r\n".encode()
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        try:
            conn.sendall(request)
            answer = b""
            while b"\r\n\r\n" not in answer and (chunk := conn.recv(65536)):
                answer += chunk
        except ConnectionResetError:
            return b""
    return answer


def test_a_rest_get_with_a_1_mb_id_is_414_not_a_reset(tmp_path: Path, daemons: MakeDaemon) -> None:
    daemon = daemons(_config(tmp_path))
    url = daemon.start()

    answer = _raw_get(url, "/a2a/rest/tasks/" + "x" * 1_000_000)

    assert answer.startswith(b"HTTP/1.1 414 "), answer[:200]
    ok = httpx.get(f"{url}/a2a/rest/tasks/no-such-task", headers=V1, timeout=10)
    assert ok.status_code == 404  # the daemon keeps serving
    assert daemon.stop() == 0
