"""The codecs and the tables that run them: one codec per version (v0.3's two shapes a
parameter of one codec), one method row per operation, one REST route table for both versions.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from core.api.methods import JSONRPC, METHODS
from core.bindings.http.rest import ROUTES, VERSIONS
from core.wire.codecs import v03, v1
from core.wire.codecs.codec import Codec
from core.wire.codecs.v03_in import Shape
from core.wire.enums import Role, TaskState
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    Artifact,
    Message,
    Part,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatus,
    TaskStatusUpdateEvent,
)

CODECS: tuple[Codec, ...] = (v1.CODEC, v03.JSONRPC, v03.PROTO)
V03_SHAPES = (v03.JSONRPC, v03.PROTO)

MESSAGE = Message(
    message_id="m-1",
    context_id="c-1",
    task_id="t-1",
    role=Role.USER,
    parts=[
        Part(text="hello", metadata={"k": "v"}),
        Part(raw="aGk=", filename="a.txt", media_type="text/plain"),
        Part(url="https://example.com/b.png", media_type="image/png"),
        Part(data={"answer": 42}),
    ],
    metadata={"m": 1},
)


def test_every_operation_has_one_row_and_a_jsonrpc_name_per_version() -> None:
    operations = [m.operation for m in METHODS]
    assert len(operations) == len(set(operations))
    named = [m.operation for m in METHODS] + [m.v03 for m in METHODS if m.v03]
    # v1.0 and v0.3 names never collide: the name alone picks the version and its codec.
    assert sorted(JSONRPC) == sorted(named)
    for method in METHODS:
        assert JSONRPC[method.operation].codec is v1.CODEC
        if method.v03:
            assert JSONRPC[method.v03].codec is v03.JSONRPC
            assert JSONRPC[method.v03].method is method


@pytest.mark.parametrize("version", [codec.version for codec, _ in VERSIONS])
def test_every_operation_has_a_rest_route_in_every_version(version: tuple[int, int]) -> None:
    routed = {r.operation for r in ROUTES if r.path_for(version) is not None}
    assert routed == {m.operation for m in METHODS}


@pytest.mark.parametrize("codec", V03_SHAPES, ids=lambda c: c.shape)
def test_a_v03_message_decodes_to_what_was_encoded(codec: v03.V03Codec) -> None:
    """Both shapes of the one v0.3 codec carry every part kind there and back (a data part
    that is not an object comes back wrapped: see the next test)."""
    encoded = codec.message_out(MESSAGE)
    assert ("content" in encoded) is (codec.shape is Shape.PROTO)
    decoded = codec.send_in({"message": encoded}).message
    assert decoded == MESSAGE


def test_the_shapes_differ_only_in_spelling() -> None:
    task = Task(
        id="t-1",
        context_id="c-1",
        status=TaskStatus(state=TaskState.CANCELED, timestamp=datetime(2026, 1, 2, tzinfo=UTC)),
        artifacts=[Artifact(artifact_id="a-1", parts=[Part(data=7)])],
    )
    rpc, proto = v03.JSONRPC.task_out(task), v03.PROTO.task_out(task)
    assert rpc["kind"] == "task"
    assert "kind" not in proto
    assert rpc["status"] == {"state": "canceled", "timestamp": "2026-01-02T00:00:00.000Z"}
    assert proto["status"]["state"] == "TASK_STATE_CANCELLED"
    assert rpc["artifacts"][0]["parts"] == [
        {"kind": "data", "data": {"value": 7}, "metadata": {"data_part_compat": True}}
    ]
    assert proto["artifacts"][0]["parts"] == [{"data": {"data": {"value": 7}}}]
    assert v03.JSONRPC.sent_out(task) == rpc
    assert v03.PROTO.sent_out(task) == {"task": proto}


@pytest.mark.parametrize("closes_at_interrupt", [True, False])
def test_v03_events_say_final_where_the_stream_closes(closes_at_interrupt: bool) -> None:
    asked = TaskStatusUpdateEvent(
        task_id="t-1", context_id="c-1", status=TaskStatus(state=TaskState.INPUT_REQUIRED)
    )
    event = StreamResponse(status_update=asked)
    rpc = v03.JSONRPC.event_out(event, closes_at_interrupt=closes_at_interrupt)
    proto = v03.PROTO.event_out(event, closes_at_interrupt=closes_at_interrupt)
    assert rpc["kind"] == "status-update"
    assert rpc["final"] is closes_at_interrupt
    assert proto["statusUpdate"]["final"] is closes_at_interrupt
    assert proto["statusUpdate"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


def test_v03_artifact_events_leave_out_what_protojson_leaves_out() -> None:
    update = TaskArtifactUpdateEvent(
        task_id="t-1",
        context_id="c-1",
        artifact=Artifact(artifact_id="a-1", parts=[Part(text="x")]),
        append=False,
        last_chunk=True,
        metadata={"m": 1},
    )
    event = StreamResponse(artifact_update=update)
    rpc = v03.JSONRPC.event_out(event, closes_at_interrupt=True)
    proto = v03.PROTO.event_out(event, closes_at_interrupt=True)["artifactUpdate"]
    assert (rpc["append"], rpc["lastChunk"], rpc["metadata"]) == (False, True, {"m": 1})
    assert proto == {
        "taskId": "t-1",
        "contextId": "c-1",
        "artifact": {"artifactId": "a-1", "parts": [{"text": "x"}]},
        "lastChunk": True,
    }


def test_v03_push_configs_are_named_by_task_or_by_resource() -> None:
    config = TaskPushNotificationConfig(id="p-1", task_id="t-1", url="https://hook.example")
    body = {"id": "p-1", "url": "https://hook.example"}
    assert v03.JSONRPC.push_config_out(config) == {
        "taskId": "t-1",
        "pushNotificationConfig": body,
    }
    assert v03.PROTO.push_config_out(config) == {
        "name": "tasks/t-1/pushNotificationConfigs/p-1",
        "pushNotificationConfig": body,
    }
    rpc_params: dict[str, Any] = {"taskId": "t-1", "pushNotificationConfig": body}
    rest_params: dict[str, Any] = {"taskId": "t-1", "config": {"pushNotificationConfig": body}}
    assert v03.JSONRPC.push_config_in(rpc_params) == config
    assert v03.PROTO.push_config_in(rest_params) == config


def test_a_proto_send_is_non_blocking_unless_it_says_blocking() -> None:
    """A proto bool left out is false; JSON-RPC blocks unless told not to."""
    message = v03.JSONRPC.message_out(MESSAGE)
    params: dict[str, Any] = {"message": message, "configuration": {"historyLength": 0}}
    proto = v03.PROTO.send_in(params).configuration
    rpc = v03.JSONRPC.send_in(params).configuration
    assert proto is not None and rpc is not None
    assert (proto.return_immediately, proto.history_length) == (True, None)
    assert (rpc.return_immediately, rpc.history_length) == (False, 0)


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: getattr(c, "shape", "v1"))
def test_bad_params_are_invalid_params_in_every_codec(codec: Codec) -> None:
    with pytest.raises(InvalidParamsError):
        codec.send_in({"message": {"messageId": "m", "role": "user", "parts": []}})


@pytest.mark.parametrize("value", [100, True, ["2026-01-01T00:00:00Z"], "yesterday"])
def test_a_timestamp_that_is_not_rfc3339_is_invalid_params(value: Any) -> None:
    """Found by tests/protocol/test_fuzz.py: a number was an internal error."""
    with pytest.raises(InvalidParamsError) as caught:
        v1.CODEC.list_tasks_in({"statusTimestampAfter": value})
    assert caught.value.violations[0][0] == "statusTimestampAfter"
