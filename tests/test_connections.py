"""The real daemon under a connection flood (slowloris): idle connections are capped and closed,
requests from others keep being answered, and the log stays small."""

from __future__ import annotations

import json
import resource
import selectors
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.daemon import MakeDaemon

FLOOD = 1100
DAEMON_OPEN_FILES = 512  # below FLOOD: without a cap the daemon runs out of descriptors
ATTACKER = "127.0.0.2"  # Linux routes all of 127/8 to lo: a second client address
WAIT = 30.0  # s: a bound on waiting, so a broken daemon fails the test rather than hangs it
LOG_GROWTH = 8 * 1024  # bytes the whole flood may add to the log


def tck(tmp_path: Path, **server: Any) -> dict[str, Any]:
    return {
        "backend": "tests.conformance.tck_backend:TckBackend",
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        "server": server,
    }


@pytest.fixture
def sockets() -> Iterator[list[socket.socket]]:
    opened: list[socket.socket] = []
    yield opened
    for sock in opened:
        sock.close()


def flood_size() -> int:
    """FLOOD, or what this process's own open-file limit leaves room for."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = FLOOD + 256
    if soft < wanted:
        soft = wanted if hard == resource.RLIM_INFINITY else min(hard, wanted)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return min(FLOOD, soft - 256)


def open_idle(url: str, count: int, opened: list[socket.socket]) -> None:
    """`count` connections from ATTACKER that never send a byte."""
    port = int(url.rsplit(":", 1)[1])
    for _ in range(count):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        opened.append(sock)
        sock.bind((ATTACKER, 0))
        sock.settimeout(WAIT)
        sock.connect(("127.0.0.1", port))


def wait_all_closed(opened: list[socket.socket]) -> int:
    """Read every socket until the server closes it (EOF or reset); how many it closed."""
    with selectors.DefaultSelector() as selector:
        for sock in opened:
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        closed = 0
        deadline = time.monotonic() + WAIT
        while closed < len(opened) and time.monotonic() < deadline:
            for key, _ in selector.select(timeout=1):
                ready = key.fileobj
                assert isinstance(ready, socket.socket)
                try:
                    data = ready.recv(65536)
                except ConnectionResetError:
                    data = b""
                if not data:
                    selector.unregister(ready)
                    closed += 1
    return closed


def send_message(url: str) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {
            "message": {
                "messageId": "tck-complete-task-1",
                "role": "ROLE_USER",
                "parts": [{"text": "hi"}],
            }
        },
    }
    response = httpx.post(
        f"{url}/a2a/jsonrpc", json=body, headers={"A2A-Version": "1.0"}, timeout=WAIT
    )
    result: dict[str, Any] = response.json()
    return result


def test_a_flood_of_idle_connections_starves_nobody_and_is_closed(
    tmp_path: Path, daemons: MakeDaemon, sockets: list[socket.socket]
) -> None:
    """Default settings: a cap of 256 per client address and a 10 s header timeout."""
    count = flood_size()
    flooded = daemons(tck(tmp_path))
    url = flooded.start(open_files=DAEMON_OPEN_FILES)
    before = flooded.log_path.stat().st_size

    open_idle(url, count, sockets)

    # Another client is served while the flood holds every connection it was allowed.
    ready = httpx.get(f"{url}/ready", timeout=WAIT)
    assert ready.status_code == 200, ready.text
    task = send_message(url)["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    # The server closes them all: at once beyond the cap, the rest at the header timeout.
    assert wait_all_closed(sockets) == count
    assert httpx.get(f"{url}/ready", timeout=WAIT).status_code == 200
    assert flooded.log_path.stat().st_size - before < LOG_GROWTH


def test_beyond_the_total_cap_a_connection_gets_503_at_once_and_idle_ones_expire(
    tmp_path: Path, daemons: MakeDaemon, sockets: list[socket.socket]
) -> None:
    capped = daemons(
        tck(
            tmp_path,
            maxConnections=20,
            maxConnectionsPerClient=0,
            headerTimeout=1000,
            # Longer than the header timeout: aiohttp's idle timer also runs from the accept.
            keepAliveTimeout=2000,
        )
    )
    url = capped.start()
    open_idle(url, 20, sockets)

    port = int(url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as one_more:
        refused = one_more.makefile("rb").read()
    assert refused.startswith(b"HTTP/1.1 503 "), refused
    assert b'"status": "UNAVAILABLE"' in refused

    assert wait_all_closed(sockets) == 20
    deadline = time.monotonic() + WAIT
    while True:
        try:
            if httpx.get(f"{url}/ready", timeout=WAIT).status_code == 200:
                break
        except httpx.TransportError:
            pass  # closed at once while a closed flood connection is still counted
        assert time.monotonic() < deadline, "the cap never freed up"

    # A kept-alive connection that goes idle after its request is closed too.
    with socket.create_connection(("127.0.0.1", port), timeout=WAIT) as kept:
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        reader = kept.makefile("rb")
        assert reader.readline().startswith(b"HTTP/1.1 200")
        while reader.readline() not in (b"\r\n", b""):
            pass
        assert reader.read(len(b'{"status": "ok"}')) == b'{"status": "ok"}'
        assert reader.read() == b""  # EOF: the server closed the idle connection

    # Refusals and timeouts were counted, not logged one by one: one summary line each.
    assert capped.stop() == 0
    lines = [json.loads(line) for line in capped.log_path.read_text().splitlines()]
    summaries = {(e["of"], e["key"]): e["count"] for e in lines if e["event"] == "log.summary"}
    assert summaries[("http.header_timeout", None)] == 20
    assert summaries[("http.connection_refused", "total")] >= 1
    assert not [e for e in lines if e["event"].startswith("http.connection")]
