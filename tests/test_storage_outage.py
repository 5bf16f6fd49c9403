"""PostgreSQL down while the daemon serves (issue 31, item 10): every binding answers a clear,
retryable "storage unavailable" in its own form (JSON-RPC -32603 with the ErrorInfo reason
STORAGE_UNAVAILABLE, HTTP 503 UNAVAILABLE, gRPC UNAVAILABLE), the daemon logs the outage once
(no traceback per request), keeps serving, and recovers when the database is back."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import grpc
import httpx
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.rpc import error_details_pb2, status_pb2

from harness.postgres import running_server
from tests.support.daemon import Daemon, MakeDaemon

V1 = {"A2A-Version": "1.0"}
REASON = "STORAGE_UNAVAILABLE"


def _message(text: str) -> dict[str, Any]:
    return {
        "messageId": f"m-{time.monotonic_ns()}",
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }


def _rpc(url: str, method: str, params: dict[str, Any], headers: Any = None) -> dict[str, Any]:
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    response = httpx.post(
        f"{url}/a2a/jsonrpc", json=body, headers=V1 if headers is None else headers, timeout=30
    )
    assert response.status_code == 200, response.text
    reply: dict[str, Any] = response.json()
    return reply


def _grpc_address(daemon: Daemon) -> str:
    assert daemon.proc is not None
    assert daemon.proc.stdout is not None
    line = daemon.proc.stdout.readline()
    assert line.startswith("a2a-wrapper listening on grpc://127.0.0.1:"), line
    return line.split("grpc://")[-1].strip()


def _grpc_reason(error: grpc.RpcError) -> str:
    trailers: Any = error.trailing_metadata()
    details = next(v for k, v in trailers if k == "grpc-status-details-bin")
    status = status_pb2.Status.FromString(details)
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    return str(info.reason)


def _log(daemon: Daemon) -> list[dict[str, Any]]:
    return [
        json.loads(line)
        for line in daemon.log_path.read_text().splitlines()
        if line.startswith("{")
    ]


def test_while_postgres_is_down_every_binding_says_storage_unavailable_and_it_recovers(
    daemons: MakeDaemon, tmp_path: Path
) -> None:
    with running_server() as server:
        daemon = daemons(
            {
                "backend": "tests.support.scripted:ScriptedBackend",
                "storage": {"kind": "postgres", "url": server.dsn()},
                "cluster": {"leaseTtl": 2000, "heartbeat": 250},
                "server": {"grpcPort": 0},
            }
        )
        url = daemon.start()
        address = _grpc_address(daemon)
        before = _rpc(url, "SendMessage", {"message": _message("echo: before")})
        assert before["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED"

        server.halt()
        try:
            errors = [
                _rpc(url, "SendMessage", {"message": _message("echo: down")})["error"]
                for _ in range(5)
            ]
            errors.append(_rpc(url, "GetTask", {"id": before["result"]["task"]["id"]})["error"])
            v03 = _rpc(
                url,
                "message/send",
                {"message": {**_message("echo: down"), "role": "user", "kind": "message"}},
                headers={},
            )["error"]
            rest = httpx.post(
                f"{url}/a2a/rest/message:send",
                json={"message": _message("echo: down")},
                headers=V1,
                timeout=30,
            )
            with grpc.insecure_channel(address) as channel:
                stub: Any = a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]  # generated code
                request = a2a_pb2.SendMessageRequest(
                    message=a2a_pb2.Message(
                        message_id="m-grpc", role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="x")]
                    )
                )
                try:
                    stub.SendMessage(request, metadata=[("a2a-version", "1.0")], timeout=30)
                    raised: grpc.RpcError | None = None
                except grpc.RpcError as exc:
                    raised = exc
            time.sleep(1)  # heartbeats, the listener and the writer meet the outage too
        finally:
            server.resume()

        deadline = time.monotonic() + 30
        while True:
            after = _rpc(url, "SendMessage", {"message": _message("echo: after")})
            if "result" in after or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert daemon.stop() == 0

    for error in errors:
        assert error["code"] == -32603, error
        assert "storage is unavailable" in error["message"]
        assert error["data"][0]["reason"] == REASON
    assert v03["code"] == -32603
    assert "storage is unavailable" in v03["message"]
    assert rest.status_code == 503
    assert rest.json()["error"]["status"] == "UNAVAILABLE"
    assert rest.json()["error"]["details"][0]["reason"] == REASON
    assert raised is not None
    assert raised.code() is grpc.StatusCode.UNAVAILABLE
    assert _grpc_reason(raised) == REASON
    assert after["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", after
    lines = _log(daemon)
    outage = {"storage.unavailable", "storage.available_again"}
    assert [e["event"] for e in lines if e["event"] in outage] == [
        "storage.unavailable",
        "storage.available_again",
    ]
    noisy = [e for e in lines if "exception" in e or e.get("level") == "error"]
    assert [(e["event"], str(e.get("exception"))[-200:]) for e in noisy] == []
