"""Session expiry on the real daemon process with the real background sweep running: the turn
after the sweep dropped a context's session says so (`expiredSession: true`), once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import Daemon

V1 = {"A2A-Version": "1.0"}


@pytest.fixture
def daemon(tmp_path: Path) -> Iterator[Daemon]:
    config = {
        "backend": "tests.support.scripted:ScriptedBackend",
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        "session": {"ttl": 3000, "cleanupInterval": 500},
    }
    made = Daemon(config, tmp_path)
    yield made
    made.close()


def send(url: str, text: str, context_id: str) -> dict[str, Any]:
    message = {
        "messageId": f"{context_id}-{text}",
        "contextId": context_id,
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}
    reply = httpx.post(f"{url}/a2a/jsonrpc", json=body, headers=V1, timeout=10).json()
    assert "result" in reply, reply
    task: dict[str, Any] = reply["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED", task
    return task


def session_of(task: dict[str, Any]) -> tuple[str, bool, bool]:
    section = task["metadata"]["a2aWrapper"]
    return section["sessionId"], section["newSession"], section["expiredSession"]


def wait_for_sweep(log: Path, deadline: float) -> None:
    """Until the background sweep logs that it removed a mapping (polling, with a deadline)."""
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            event = json.loads(line)
            if event.get("event") == "sessions.swept" and event.get("removed", 0) >= 1:
                return
        time.sleep(0.05)
    pytest.fail(f"the session sweep removed nothing before the deadline:\n{log.read_text()}")


def test_the_turn_after_the_sweep_expired_its_session_reports_it(daemon: Daemon) -> None:
    url = daemon.start()
    first, first_new, _ = session_of(send(url, "history: one", "ctx"))

    wait_for_sweep(daemon.log_path, time.monotonic() + 30)
    after, after_new, after_expired = session_of(send(url, "history: two", "ctx"))
    _, again_new, again_expired = session_of(send(url, "history: three", "ctx"))
    _, fresh_new, fresh_expired = session_of(send(url, "history: fresh", "other-ctx"))
    assert daemon.stop() == 0

    assert first_new is True
    assert after != first
    assert (after_new, after_expired) == (True, True)
    # The tombstone was consumed: the next turn continues the new session, nothing to report.
    assert (again_new, again_expired) == (False, False)
    assert (fresh_new, fresh_expired) == (True, False)
