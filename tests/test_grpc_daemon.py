"""The gRPC binding of the real daemon process: the announced address, auth and negotiation
in metadata, errors as google.rpc.Status, and the shutdown of a server with a stream open."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from a2a.types import a2a_pb2, a2a_pb2_grpc
from google.rpc import error_details_pb2, status_pb2

from tests.support.daemon import Daemon, MakeDaemon

TOKEN = "grpc-test-token-0123456789"  # noqa: S105 - the test's own token
AUTH = ("authorization", f"Bearer {TOKEN}")
V1 = ("a2a-version", "1.0")


def _config(tmp_path: Path) -> dict[str, Any]:
    return {
        "backend": "tests.conformance.tck_backend:TckBackend",
        "storage": {"path": str(tmp_path / "tasks.sqlite3")},
        "server": {
            "grpcPort": 0,
            "shutdownTimeout": 200,
            "auth": {"tokens": [{"token": TOKEN, "principal": "tester"}]},
        },
    }


def _grpc_address(daemon: Daemon) -> str:
    assert daemon.proc is not None
    assert daemon.proc.stdout is not None
    line = daemon.proc.stdout.readline()
    assert line.startswith("a2a-wrapper listening on grpc://127.0.0.1:"), line
    return line.split("grpc://")[-1].strip()


@pytest.fixture
def served(tmp_path: Path, daemons: MakeDaemon) -> Iterator[tuple[Daemon, str]]:
    daemon = daemons(_config(tmp_path))
    daemon.start()
    yield daemon, _grpc_address(daemon)


def _reason(error: grpc.RpcError) -> str:
    trailers: Any = error.trailing_metadata()
    details = next(v for k, v in trailers if k == "grpc-status-details-bin")
    status = status_pb2.Status.FromString(details)
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.domain == "a2a-protocol.org"
    return str(info.reason)


def _stub(channel: grpc.Channel) -> Any:
    return a2a_pb2_grpc.A2AServiceStub(channel)  # type: ignore[no-untyped-call]  # generated code


def _send(message_id: str) -> a2a_pb2.SendMessageRequest:
    return a2a_pb2.SendMessageRequest(
        message=a2a_pb2.Message(
            message_id=message_id, role=a2a_pb2.ROLE_USER, parts=[a2a_pb2.Part(text="hi")]
        ),
        configuration=a2a_pb2.SendMessageConfiguration(return_immediately=True),
    )


def test_auth_version_and_errors_over_grpc(served: tuple[Daemon, str]) -> None:
    daemon, address = served
    with grpc.insecure_channel(address) as channel:
        stub = _stub(channel)
        unknown = a2a_pb2.GetTaskRequest(id="no-such-task")
        with pytest.raises(grpc.RpcError) as no_token:
            stub.GetTask(unknown, metadata=[V1])
        assert no_token.value.code() == grpc.StatusCode.UNAUTHENTICATED

        for version in ([], [("a2a-version", "99.0")]):
            with pytest.raises(grpc.RpcError) as refused:
                stub.GetTask(unknown, metadata=[AUTH, *version])
            assert refused.value.code() == grpc.StatusCode.UNIMPLEMENTED
            assert _reason(refused.value) == "VERSION_NOT_SUPPORTED"

        with pytest.raises(grpc.RpcError) as missing:
            stub.GetTask(unknown, metadata=[AUTH, V1])
        assert missing.value.code() == grpc.StatusCode.NOT_FOUND
        assert _reason(missing.value) == "TASK_NOT_FOUND"

        done = stub.SendMessage(_send("tck-complete-task-1"), metadata=[AUTH, V1]).task
        got = stub.GetTask(a2a_pb2.GetTaskRequest(id=done.id), metadata=[AUTH, V1])
        assert got.id == done.id
    assert daemon.stop() == 0


def test_shutdown_ends_open_streams_and_closes_the_port(served: tuple[Daemon, str]) -> None:
    daemon, address = served
    with grpc.insecure_channel(address) as channel:
        stub = _stub(channel)
        # The conformance backend keeps this task working for seconds.
        task = stub.SendMessage(_send("test-resubscribe-message-id-g"), metadata=[AUTH, V1]).task
        stream = stub.SubscribeToTask(
            a2a_pb2.SubscribeToTaskRequest(id=task.id), metadata=[AUTH, V1]
        )
        first = next(stream)
        assert first.task.id == task.id
        daemon.proc.send_signal(signal.SIGTERM)  # type: ignore[union-attr]
        states = [e.status_update.status.state for e in stream if e.HasField("status_update")]
        # The drain fails the running turn with a reason; the stream carries it, then ends.
        assert states[-1] == a2a_pb2.TASK_STATE_FAILED
    assert daemon.proc is not None
    assert daemon.proc.wait(15) == 0
    assert daemon.proc.stdout is not None
    daemon.proc.stdout.close()
    with grpc.insecure_channel(address) as channel:
        with pytest.raises(grpc.RpcError) as gone:
            _stub(channel).GetTask(
                a2a_pb2.GetTaskRequest(id=task.id), metadata=[AUTH, V1], timeout=5
            )
        assert gone.value.code() == grpc.StatusCode.UNAVAILABLE
