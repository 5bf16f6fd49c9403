"""Nothing stored can stop a start or break a listing (issue 17, item 1), on the real daemon.

Rows nobody can read are written straight into each table of a real daemon's SQLite file: the
daemon still starts and serves, lists around them, answers TaskNotFound for such a task, and
logs each row once (a `store.unreadable_row` line naming table and key), not a traceback per
request.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from tests.support.daemon import EXE, MakeDaemon

V1 = {"A2A-Version": "1.0"}

# The body main stored for `{"text": null}`: a part without content, which no read accepts.
NULL_PART_TASK = {
    "id": "t-null-part",
    "contextId": "c-null-part",
    "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-01-01T00:00:00.000Z"},
    "history": [
        {"messageId": "m-null", "role": "ROLE_USER", "taskId": "t-null-part", "parts": [{}]}
    ],
}


def _config(db: Path) -> dict[str, Any]:
    return {
        "backend": "tests.support.scripted:ScriptedBackend",
        "storage": {"path": str(db)},
        "push": {"enabled": True},
    }


def _rpc(url: str, method: str, params: dict[str, Any], headers: Any = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(
        f"{url}/a2a/jsonrpc", json=body, headers=V1 if headers is None else headers, timeout=10
    )
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()
    return result


def _send(url: str, text: str, **message: Any) -> dict[str, Any]:
    params = {"message": {"messageId": f"m-{text}", "role": "ROLE_USER", "parts": [{"text": text}]}}
    params["message"].update(message)
    reply = _rpc(url, "SendMessage", params)
    assert "result" in reply, reply
    task: dict[str, Any] = reply["result"]["task"]
    return task


def _insert(db: Path, table: str, row: dict[str, Any]) -> None:
    with sqlite3.connect(db) as conn:
        columns = ", ".join(row)
        marks = ", ".join("?" for _ in row)
        conn.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row.values()))  # noqa: S608 - test-chosen table and column names


def _unreadable_lines(log: Path) -> list[dict[str, Any]]:
    lines = []
    for line in log.read_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("event") == "store.unreadable_row":
                lines.append(entry)
    return lines


def _bad_rows(db: Path, principal: str, good_task: str) -> dict[str, list[dict[str, Any]]]:
    """Write unreadable rows into every table; returns the key each should be logged under."""
    # Recent, so the retention sweep at start leaves them (it would remove old failed ones).
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    task_row = {"principal": principal, "context_id": "c", "status_ts": now}
    bad_tasks = {
        "t-null-part": ("TASK_STATE_WORKING", json.dumps(NULL_PART_TASK)),
        "t-not-json": ("TASK_STATE_COMPLETED", "{not json"),
        "t-wrong-shape": ("TASK_STATE_COMPLETED", json.dumps({"id": "t-wrong-shape"})),
        "t-blob": ("TASK_STATE_SUBMITTED", b"\x00\x01"),
    }
    for task_id, (state, body) in bad_tasks.items():
        _insert(db, "tasks", {**task_row, "id": task_id, "state": state, "body": body})
    _insert(
        db,
        "sessions",
        {
            "principal": principal,
            "context_id": "c-bad-session",
            "backend": "scripted",
            "session_id": "s-1",
            "created_at": "not a time",
            "last_used_at": "not a time",
            "turns": 0,
        },
    )
    good_config = {"taskId": good_task, "id": "good", "url": "https://example.com/hook"}
    for config_id, version, body in (
        ("good", "1.0", json.dumps(good_config)),
        ("bad-json", "1.0", "{"),
        ("bad-version", "9.9", json.dumps({**good_config, "id": "bad-version"})),
    ):
        _insert(
            db,
            "push_configs",
            {
                "principal": principal,
                "task_id": good_task,
                "id": config_id,
                "version": version,
                "body": body,
                "created": 1,
            },
        )
    _insert(
        db,
        "push_outbox",
        {"seq": 7, "principal": principal, "version": "1.0", "config": "nope", "body": "{}"},
    )
    return {
        "tasks": [{"principal": principal, "id": t} for t in bad_tasks],
        "sessions": [{"principal": principal, "context_id": "c-bad-session"}],
        "push_configs": [
            {"principal": principal, "task_id": good_task, "id": c}
            for c in ("bad-json", "bad-version")
        ],
        "push_outbox": [{"seq": 7}],
    }


def test_unreadable_rows_never_stop_a_start(tmp_path: Path, daemons: MakeDaemon) -> None:
    db = tmp_path / "tasks.sqlite3"
    daemon = daemons(_config(db))
    url = daemon.start()
    good = _send(url, "echo: kept")
    assert good["status"]["state"] == "TASK_STATE_COMPLETED"
    assert daemon.stop() == 0
    with sqlite3.connect(db) as conn:
        (principal,) = conn.execute("SELECT principal FROM tasks").fetchone()
    expected = _bad_rows(db, principal, good["id"])

    url = daemon.start()
    # Listings go around the bad rows, every time, on every binding.
    for _ in range(2):
        listed = _rpc(url, "ListTasks", {})["result"]
        assert [t["id"] for t in listed["tasks"]] == [good["id"]]
        paged = _rpc(url, "ListTasks", {"pageSize": 1})["result"]
        ids, token = [t["id"] for t in paged["tasks"]], paged["nextPageToken"]
        while token:
            paged = _rpc(url, "ListTasks", {"pageSize": 1, "pageToken": token})["result"]
            ids += [t["id"] for t in paged["tasks"]]
            token = paged["nextPageToken"]
        assert ids == [good["id"]]
        rest = httpx.get(f"{url}/a2a/rest/tasks", headers=V1, timeout=10)
        assert rest.status_code == 200, rest.text
        assert [t["id"] for t in rest.json()["tasks"]] == [good["id"]]
        legacy = httpx.get(f"{url}/a2a/rest/v1/tasks", timeout=10)
        assert legacy.status_code == 200, legacy.text
        assert [t["id"] for t in legacy.json()] == [good["id"]]
    # A bad task is not found, with a message that says why.
    for key in expected["tasks"]:
        for _ in range(2):
            error = _rpc(url, "GetTask", {"id": key["id"]})["error"]
            assert error["code"] == -32001, error
            assert "cannot be read" in error["message"], key
    legacy_error = _rpc(url, "tasks/get", {"id": "t-not-json"}, headers={})["error"]
    assert legacy_error["code"] == -32001
    rest_error = httpx.get(f"{url}/a2a/rest/tasks/t-blob", headers=V1, timeout=10)
    assert rest_error.status_code == 404
    assert rest_error.json()["error"]["details"][0]["reason"] == "TASK_NOT_FOUND"
    # Push configs: the readable one is listed, the others are not found.
    configs = _rpc(url, "ListTaskPushNotificationConfigs", {"taskId": good["id"]})["result"]
    assert [c["id"] for c in configs["configs"]] == ["good"]
    missing = _rpc(url, "GetTaskPushNotificationConfig", {"taskId": good["id"], "id": "bad-json"})
    assert missing["error"]["code"] == -32001
    # The context whose session mapping is damaged starts a fresh session, which replaces it.
    fresh = _send(url, "echo: again", contextId="c-bad-session")
    assert fresh["status"]["state"] == "TASK_STATE_COMPLETED"
    assert fresh["metadata"]["a2aWrapper"]["newSession"] is True
    assert _send(url, "echo: alive")["status"]["state"] == "TASK_STATE_COMPLETED"
    assert daemon.stop() == 0

    logged = _unreadable_lines(daemon.log_path)
    # Each bad row exactly once, though every one was read several times.
    by_table = {
        t: sorted(json.dumps(e["key"]) for e in logged if e["table"] == t) for t in expected
    }
    assert by_table == {t: sorted(map(json.dumps, keys)) for t, keys in expected.items()}
    assert len(logged) == sum(map(len, expected.values())), logged
    assert all(e["level"] == "warning" and e["error"] for e in logged)
    log_text = daemon.log_path.read_text()
    assert "Traceback" not in log_text
    assert "request.internal_error" not in log_text
    with sqlite3.connect(db) as conn:
        states = dict(conn.execute("SELECT id, state FROM tasks WHERE id LIKE 't-%'").fetchall())
        session = conn.execute(
            "SELECT created_at FROM sessions WHERE context_id = 'c-bad-session'"
        ).fetchone()
    # The bad tasks that were running are marked FAILED, so retention removes them in time.
    assert states["t-null-part"] == states["t-blob"] == "TASK_STATE_FAILED"
    assert session[0] != "not a time"


def _wait_state(url: str, task_id: str, state: str) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        task = _rpc(url, "GetTask", {"id": task_id})["result"]
        if task["status"]["state"] == state:
            return
        time.sleep(0.05)
    raise AssertionError(f"task {task_id} never reached {state}")


NULL_PARTS_V1: list[dict[str, Any]] = [{"text": None}, {"data": None}, {"raw": None}, {"url": None}]
NULL_PARTS_V03: list[dict[str, Any]] = [
    {"kind": "text", "text": None},
    {"kind": "text"},
    {"kind": "data", "data": None},
    {"kind": "file", "file": {"bytes": None}},
    {"kind": "file", "file": {"uri": None}},
]


def test_null_part_is_refused_and_a_crash_mid_turn_cannot_stop_a_start(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    db = tmp_path / "tasks.sqlite3"
    daemon = daemons(_config(db))
    url = daemon.start()
    for part in NULL_PARTS_V1:
        message = {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}, part]}
        error = _rpc(url, "SendMessage", {"message": message})["error"]
        assert error["code"] == -32602, (part, error)
        assert f"message.parts.1: Value error, {next(iter(part))} is null" in error["message"]
    for part in NULL_PARTS_V03:
        message = {"messageId": "m", "role": "user", "kind": "message", "parts": [part]}
        error = _rpc(url, "message/send", {"message": message}, headers={})["error"]
        assert error["code"] == -32602, (part, error)
        assert error["data"][0]["field"].startswith("message.parts.0."), error
    assert _rpc(url, "ListTasks", {})["result"]["tasks"] == []

    # A turn is running when the daemon dies; its stored record then holds such a part (what
    # main stored for `{"text": null}`): the next start must still come up.
    running = _rpc(
        url,
        "SendMessage",
        {
            "message": {"messageId": "m-b", "role": "ROLE_USER", "parts": [{"text": "block"}]},
            "configuration": {"returnImmediately": True},
        },
    )["result"]["task"]
    _wait_state(url, running["id"], "TASK_STATE_WORKING")
    daemon.kill()
    with sqlite3.connect(db) as conn:
        (body,) = conn.execute("SELECT body FROM tasks WHERE id = ?", (running["id"],)).fetchone()
        task = json.loads(body)
        assert task["status"]["state"] == "TASK_STATE_WORKING"
        task["history"][0]["parts"].append({})
        conn.execute("UPDATE tasks SET body = ? WHERE id = ?", (json.dumps(task), running["id"]))

    url = daemon.start()
    error = _rpc(url, "GetTask", {"id": running["id"]})["error"]
    assert error["code"] == -32001
    assert _rpc(url, "ListTasks", {})["result"]["tasks"] == []
    assert _send(url, "echo: alive")["status"]["state"] == "TASK_STATE_COMPLETED"
    assert daemon.stop() == 0
    logged = _unreadable_lines(daemon.log_path)
    assert [e["key"]["id"] for e in logged] == [running["id"]]


def _refused(daemon: Any, db: Path) -> str:
    """The daemon exits with the storage code and one plain line (no traceback); the line."""
    code, out, err = daemon.run_to_exit()
    assert code == 3, err
    assert out == ""
    assert "Traceback" not in err
    lines = [line for line in err.strip().splitlines() if not line.startswith("{")]
    assert len(lines) == 1, err
    line: str = lines[0]
    assert line.startswith(f"a2a-wrapper: cannot open the storage at {db}: "), lines
    return line


def _tables(db: Path) -> list[str]:
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def test_a_foreign_sqlite_file_is_refused_before_anything_is_written_in_it(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    """Another program's database, with a `tasks` table of its own (and one that is not)."""
    db = tmp_path / "theirs.sqlite3"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE tasks (id INTEGER PRIMARY KEY, title TEXT, done INTEGER)")
        conn.execute("INSERT INTO tasks (title, done) VALUES ('buy milk', 0)")
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    before = db.read_bytes(), other.read_bytes()

    theirs = daemons(_config(db))
    line = _refused(theirs, db)
    other_line = _refused(daemons(_config(other)), other)

    listing = subprocess.run(  # noqa: S603 - fixed argument list, no shell
        [str(EXE), "workspaces", str(theirs.config_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert listing.returncode == 3, listing.stderr
    assert listing.stderr.startswith(f"a2a-wrapper: cannot open the storage at {db}: ")
    assert "another program's database (tables tasks are not a2a-wrapper's)" in line
    assert "tables invoices are not" in other_line
    assert (db.read_bytes(), other.read_bytes()) == before
    assert _tables(db) == ["tasks"]
    assert _tables(other) == ["invoices"]


def test_a_file_that_is_not_sqlite_or_is_damaged_is_one_line_and_exit_3(
    tmp_path: Path, daemons: MakeDaemon
) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n" * 100)
    damaged = tmp_path / "damaged.sqlite3"
    with sqlite3.connect(damaged) as conn:
        conn.execute("CREATE TABLE tasks (x TEXT)")
    raw = bytearray(damaged.read_bytes())
    raw[100:] = b"\xff" * (len(raw) - 100)  # the header survives, the schema page does not
    damaged.write_bytes(bytes(raw))

    assert "not an SQLite database" in _refused(daemons(_config(text)), text)
    assert "damaged or not an SQLite database" in _refused(daemons(_config(damaged)), damaged)
    assert text.read_text() == "not a database\n" * 100


def test_our_own_file_from_an_earlier_run_opens_again(tmp_path: Path, daemons: MakeDaemon) -> None:
    """The check accepts what the daemon wrote itself, also after a kill (WAL files left)."""
    db = tmp_path / "tasks.sqlite3"
    daemon = daemons(_config(db))
    url = daemon.start()
    _send(url, "echo: one")
    daemon.kill()
    url = daemon.start()
    assert _send(url, "echo: two")["status"]["state"] == "TASK_STATE_COMPLETED"
    assert daemon.stop() == 0
    url = daemon.start()
    assert len(_rpc(url, "ListTasks", {})["result"]["tasks"]) == 2
    assert daemon.stop() == 0
