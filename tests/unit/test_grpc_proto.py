"""The gRPC converters (core/bindings/grpc/proto_v1.py, proto_v03.py): every message kind
round-trips, and each encoding and decoding equals what the ProtoJSON path gave (the message
parsed from our JSON, the model validated from `MessageToDict`), bad input included: the same
InvalidParams with the same violations."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

import pytest
from google.protobuf import json_format
from google.protobuf.message import Message as Proto

from core.api.calls import parse
from core.bindings.grpc import proto_v03, proto_v1
from core.bindings.grpc.protos import v03_pb2, v1_pb2
from core.wire.codecs.v03 import PROTO as V03_JSON  # v0.3 ProtoJSON: the old gRPC path
from core.wire.errors import InvalidParamsError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskPushConfigRequest,
    TaskPushNotificationConfig,
)

WHEN = "2026-12-02T03:04:05.678Z"
METADATA = {"n": 1, "f": 2.5, "s": "x", "b": True, "null": None, "list": [1, "a", {"k": []}]}
PARTS: list[dict[str, Any]] = [
    {"text": "hello", "metadata": {"lang": "en"}},
    {"text": ""},
    {"raw": "aGVsbG8=", "filename": "h.txt", "mediaType": "text/plain"},
    {"url": "https://example.com/f.png", "mediaType": "image/png"},
    {"data": {"a": [1, 2, {"b": None}], "c": "d"}},
    {"data": [1, "two"]},
    {"data": "scalar"},
    {"data": {}},
    {"data": []},
    {"data": [[], {}, None, False]},
]
MESSAGE: dict[str, Any] = {
    "messageId": "m-1",
    "contextId": "c-1",
    "taskId": "t-1",
    "role": "ROLE_USER",
    "parts": PARTS,
    "metadata": METADATA,
    "extensions": ["https://ext/a"],
    "referenceTaskIds": ["t-0"],
}
REPLY = {"messageId": "m-2", "role": "ROLE_AGENT", "parts": [{"text": "done"}]}
ARTIFACT = {
    "artifactId": "a-1",
    "name": "out",
    "description": "the output",
    "parts": PARTS[:5],
    "metadata": {"k": "v"},
    "extensions": ["https://ext/b"],
}
TASK: dict[str, Any] = {
    "id": "t-1",
    "contextId": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED", "message": REPLY, "timestamp": WHEN},
    "artifacts": [ARTIFACT, {"artifactId": "a-2", "parts": [{"text": "x"}]}],
    "history": [MESSAGE, REPLY],
    "metadata": {"empty": {}},
}
PUSH = {
    "id": "p-1",
    "taskId": "t-1",
    "url": "https://hooks.example.com/a2a",
    "token": "tok",
    "authentication": {"scheme": "Bearer", "credentials": "secret"},
}
EVENTS: list[dict[str, Any]] = [
    {"task": TASK},
    {"message": REPLY},
    {
        "statusUpdate": {
            "taskId": "t-1",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_WORKING", "timestamp": WHEN},
            "metadata": {"step": 3},
        }
    },
    {
        "statusUpdate": {
            "taskId": "t-1",
            "contextId": "c-1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "message": REPLY},
        }
    },
    {"statusUpdate": {"taskId": "t", "contextId": "c", "status": {"state": "TASK_STATE_CANCELED"}}},
    {
        "artifactUpdate": {
            "taskId": "t-1",
            "contextId": "c-1",
            "artifact": ARTIFACT,
            "append": True,
            "lastChunk": True,
            "metadata": {"chunk": 2},
        }
    },
    {"artifactUpdate": {"taskId": "t-1", "contextId": "c-1", "artifact": ARTIFACT}},
]


P = TypeVar("P", bound=Proto)


def _parsed(message: type[P], document: Any) -> P:
    """What the ProtoJSON path sent: our JSON parsed into the response message."""
    out = message()
    json_format.ParseDict(document, out, ignore_unknown_fields=True)
    return out


def _as_dict(message: Proto) -> dict[str, Any]:
    found: dict[str, Any] = json_format.MessageToDict(message)
    return found


def _old(model: type[Any], wire: Proto) -> Any:
    return parse(model, _as_dict(wire))


def _error(call: Any) -> InvalidParamsError:
    with pytest.raises(InvalidParamsError) as caught:
        call()
    return caught.value


def _same_error(new: Any, old: Any) -> None:
    ours, before = _error(new), _error(old)
    assert (ours.message, ours.violations) == (before.message, before.violations)


# ----- v1.0: round trips ------------------------------------------------------------------------


def test_v1_send_request_round_trips_every_part_kind() -> None:
    request = SendMessageRequest.model_validate(
        {
            "tenant": "acme",
            "message": MESSAGE,
            "configuration": {
                "acceptedOutputModes": ["text/plain"],
                "taskPushNotificationConfig": PUSH,
                "historyLength": 0,
                "returnImmediately": True,
            },
            "metadata": METADATA,
        }
    )
    wire = _parsed(v1_pb2.SendMessageRequest, request.dump())
    decoded = proto_v1.send_request(wire)
    assert decoded == request
    assert decoded == parse(SendMessageRequest, _as_dict(wire))


@pytest.mark.parametrize("outcome", [TASK, REPLY], ids=["task", "message"])
def test_v1_send_response_is_what_protojson_gave(outcome: dict[str, Any]) -> None:
    model: Task | Message = Task.model_validate(outcome) if "id" in outcome else Message(**outcome)
    key = "task" if isinstance(model, Task) else "message"
    ours = proto_v1.send_response(model)
    assert ours == _parsed(v1_pb2.SendMessageResponse, {key: model.dump()})
    back = _as_dict(ours)[key]
    assert type(model).model_validate(back) == model


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: next(iter(e)))
def test_v1_stream_events_are_what_protojson_gave(event: dict[str, Any]) -> None:
    model = StreamResponse.model_validate(event)
    ours = proto_v1.event_out(model)
    assert ours == _parsed(v1_pb2.StreamResponse, model.dump())
    assert StreamResponse.model_validate(_as_dict(ours)) == model


def test_v1_task_list_and_push_configs() -> None:
    listing = ListTasksResponse.model_validate(
        {"tasks": [TASK], "nextPageToken": "n", "pageSize": 1, "totalSize": 3}
    )
    assert proto_v1.task_list_out(listing) == _parsed(v1_pb2.ListTasksResponse, listing.dump())
    config = TaskPushNotificationConfig.model_validate({**PUSH, "tenant": "acme"})
    wire = proto_v1.push_config_out(config)
    assert wire == _parsed(v1_pb2.TaskPushNotificationConfig, config.dump())
    assert proto_v1.push_config(wire) == config


def test_v1_timestamps_carry_milliseconds_as_the_json_did() -> None:
    task = Task.model_validate({**TASK, "status": {"state": "TASK_STATE_WORKING"}})
    task = task.model_copy(
        update={
            "status": task.status.model_copy(
                update={"timestamp": datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)}
            )
        }
    )
    ours = proto_v1.task_out(task)
    assert ours == _parsed(v1_pb2.Task, task.dump())
    assert isinstance(ours, v1_pb2.Task)
    assert ours.status.timestamp.nanos == 678_000_000


def test_v1_simple_requests_decode_as_protojson_did() -> None:
    cases: list[tuple[Any, Proto, type[Any]]] = [
        (
            proto_v1.get_task_request,
            v1_pb2.GetTaskRequest(id="t", history_length=0),
            GetTaskRequest,
        ),
        (proto_v1.cancel_request, v1_pb2.CancelTaskRequest(id="t"), CancelTaskRequest),
        (proto_v1.subscribe_request, v1_pb2.SubscribeToTaskRequest(id="t"), SubscribeToTaskRequest),
    ]
    listing = v1_pb2.ListTasksRequest(
        context_id="c", status=v1_pb2.TASK_STATE_WORKING, page_size=5, include_artifacts=False
    )
    listing.status_timestamp_after.FromJsonString(WHEN)
    cases.append((proto_v1.list_tasks_request, listing, ListTasksRequest))
    cases.append((proto_v1.cancel_request, v1_pb2.CancelTaskRequest(id="t"), CancelTaskRequest))
    for decode, wire, model in cases:
        assert decode(wire) == parse(model, _as_dict(wire))
    get = v1_pb2.GetTaskPushNotificationConfigRequest(task_id="t", id="p")
    found = proto_v1.push_config_request(get, need_id=True)
    assert found == parse(TaskPushConfigRequest, _as_dict(get))
    pages = v1_pb2.ListTaskPushNotificationConfigsRequest(task_id="t", page_size=2, page_token="2")
    assert proto_v1.push_config_request(pages, need_id=False) == TaskPushConfigRequest(
        task_id="t", page_size=2, page_token="2"
    )


# ----- v1.0: bad input --------------------------------------------------------------------------


def _send(message: dict[str, Any] | None = None, **fields: Any) -> v1_pb2.SendMessageRequest:
    wire = v1_pb2.SendMessageRequest(**fields)
    if message is not None:
        json_format.ParseDict(message, wire.message)
    return wire


BAD_SENDS = {
    "no message": _send(),
    "no messageId": _send({"role": "ROLE_USER", "parts": [{"text": "x"}]}),
    "no parts": _send({"messageId": "m", "role": "ROLE_USER"}),
    "no role": _send({"messageId": "m", "parts": [{"text": "x"}]}),
    "unknown role": _send({"messageId": "m", "role": 7, "parts": [{"text": "x"}]}),
    "part without content": _send(
        {"messageId": "m", "role": "ROLE_USER", "parts": [{"filename": "a"}]}
    ),
    "null data": _send(
        {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}, {"data": None}]}
    ),
    "negative history": v1_pb2.SendMessageRequest(
        message=_send({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}).message,
        configuration=v1_pb2.SendMessageConfiguration(history_length=-1),
    ),
    "push config without url": v1_pb2.SendMessageRequest(
        message=_send({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]}).message,
        configuration=v1_pb2.SendMessageConfiguration(
            task_push_notification_config=v1_pb2.TaskPushNotificationConfig(id="p")
        ),
    ),
}


@pytest.mark.parametrize("wire", BAD_SENDS.values(), ids=BAD_SENDS.keys())
def test_v1_bad_send_requests_give_the_same_invalid_params(wire: v1_pb2.SendMessageRequest) -> None:
    _same_error(
        lambda: proto_v1.send_request(wire),
        lambda: parse(SendMessageRequest, _as_dict(wire)),
    )


def test_v1_bad_simple_requests_give_the_same_invalid_params() -> None:
    cases: list[tuple[Any, Proto, type[Any]]] = [
        (proto_v1.get_task_request, v1_pb2.GetTaskRequest(), GetTaskRequest),
        (
            proto_v1.get_task_request,
            v1_pb2.GetTaskRequest(id="t", history_length=-2),
            GetTaskRequest,
        ),
        (proto_v1.cancel_request, v1_pb2.CancelTaskRequest(), CancelTaskRequest),
        (proto_v1.subscribe_request, v1_pb2.SubscribeToTaskRequest(), SubscribeToTaskRequest),
        (proto_v1.list_tasks_request, v1_pb2.ListTasksRequest(status=42), ListTasksRequest),  # type: ignore[arg-type]
        (proto_v1.list_tasks_request, v1_pb2.ListTasksRequest(page_size=0), ListTasksRequest),
        (
            proto_v1.push_config,
            v1_pb2.TaskPushNotificationConfig(id="p"),
            TaskPushNotificationConfig,
        ),
    ]
    for decode, wire, model in cases:
        _same_error(partial(decode, wire), partial(_old, model, wire))
    missing_task = v1_pb2.GetTaskPushNotificationConfigRequest(id="p")
    _same_error(
        lambda: proto_v1.push_config_request(missing_task, need_id=True),
        lambda: parse(TaskPushConfigRequest, _as_dict(missing_task)),
    )
    no_id = v1_pb2.DeleteTaskPushNotificationConfigRequest(task_id="t")
    error = _error(lambda: proto_v1.push_config_request(no_id, need_id=True))
    assert error.violations == [("id", "required")]


def test_v1_timestamps_out_of_range_are_invalid_params() -> None:
    """The ProtoJSON path refused them as undecodable (INVALID_ARGUMENT too); now the
    field is named."""
    wire = v1_pb2.ListTasksRequest()
    wire.status_timestamp_after.seconds = 10**13
    error = _error(lambda: proto_v1.list_tasks_request(wire))
    assert error.violations == [("statusTimestampAfter", "not a valid timestamp")]


def test_v1_non_finite_numbers_are_invalid_params() -> None:
    """The ProtoJSON path failed them as an internal error (its serializer refuses them)."""
    wire = _send({"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "x"}]})
    wire.metadata["n"] = float("nan")
    error = _error(lambda: proto_v1.send_request(wire))
    assert "finite" in error.message


# ----- v0.3 -----------------------------------------------------------------------------------


def _v03_send(message: dict[str, Any] | None, **config: Any) -> v03_pb2.SendMessageRequest:
    wire = v03_pb2.SendMessageRequest()
    if message is not None:
        json_format.ParseDict(message, wire.request)
    if config:
        json_format.ParseDict(config, wire.configuration)
    return wire


def _v03_old_send(wire: v03_pb2.SendMessageRequest) -> SendMessageRequest:
    return V03_JSON.send_in(_as_dict(wire))


V03_MESSAGE = {
    "messageId": "m-1",
    "contextId": "c-1",
    "taskId": "t-1",
    "role": "ROLE_USER",
    "content": [
        {"text": "hi", "metadata": {"k": 1}},
        {"file": {"fileWithBytes": "aGk=", "mimeType": "text/plain", "name": "a.txt"}},
        {"file": {"fileWithUri": "https://example.com/x"}},
        {"data": {"data": {"a": [1, None]}}},
        {"data": {"data": {"value": 5}}, "metadata": {"data_part_compat": True}},
    ],
    "metadata": {"m": "v"},
    "extensions": ["https://ext/a"],
}


def test_v03_send_request_decodes_as_the_protojson_codec_did() -> None:
    push = {"url": "https://h/x", "token": "t", "authentication": {"schemes": ["Bearer"]}}
    for config in (
        {},
        {"blocking": True, "historyLength": 3, "acceptedOutputModes": ["text/plain"]},
        {"pushNotification": push},
    ):
        wire = _v03_send(V03_MESSAGE, **config)
        assert proto_v03.send_request(wire) == _v03_old_send(wire)


BAD_V03_SENDS = {
    "no message": _v03_send(None),
    "no content": _v03_send({"messageId": "m", "role": "ROLE_USER"}),
    "empty part": _v03_send({"messageId": "m", "role": "ROLE_USER", "content": [{}]}),
    "file without bytes or uri": _v03_send(
        {"messageId": "m", "role": "ROLE_USER", "content": [{"file": {"name": "a"}}]}
    ),
    "compat data without value": _v03_send(
        {
            "messageId": "m",
            "role": "ROLE_USER",
            "content": [{"data": {"data": {}}, "metadata": {"data_part_compat": True}}],
        }
    ),
    "unknown role": _v03_send({"messageId": "m", "role": 9, "content": [{"text": "x"}]}),
    "push without schemes": _v03_send(
        {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]},
        pushNotification={"url": "https://h", "authentication": {"credentials": "c"}},
    ),
    "negative history": _v03_send(
        {"messageId": "m", "role": "ROLE_USER", "content": [{"text": "x"}]}, historyLength=-1
    ),
}


@pytest.mark.parametrize("wire", BAD_V03_SENDS.values(), ids=BAD_V03_SENDS.keys())
def test_v03_bad_send_requests_give_the_same_invalid_params(
    wire: v03_pb2.SendMessageRequest,
) -> None:
    _same_error(lambda: proto_v03.send_request(wire), lambda: _v03_old_send(wire))


@pytest.mark.parametrize("outcome", [TASK, REPLY], ids=["task", "message"])
def test_v03_send_response_is_what_the_protojson_codec_gave(outcome: dict[str, Any]) -> None:
    if "id" in outcome:
        task = Task.model_validate(outcome)
        expected = _parsed(v03_pb2.SendMessageResponse, {"task": V03_JSON.task_out(task)})
        assert proto_v03.send_response(task) == expected
        assert proto_v03.task_out(task) == _parsed(v03_pb2.Task, V03_JSON.task_out(task))
    else:
        message = Message.model_validate(outcome)
        expected = _parsed(v03_pb2.SendMessageResponse, {"msg": V03_JSON.message_out(message)})
        assert proto_v03.send_response(message) == expected


@pytest.mark.parametrize("closes", [True, False], ids=["send", "subscribe"])
@pytest.mark.parametrize("event", EVENTS, ids=lambda e: next(iter(e)))
def test_v03_stream_events_are_what_the_protojson_codec_gave(
    event: dict[str, Any], closes: bool
) -> None:
    model = StreamResponse.model_validate(event)
    ours = proto_v03.event_out(model, closes_at_interrupt=closes)
    old = V03_JSON.event_out(model, closes_at_interrupt=closes)
    assert ours == _parsed(
        v03_pb2.StreamResponse, {"msg" if "message" in old else k: v for k, v in old.items()}
    )


def test_v03_push_configs_round_trip() -> None:
    config = TaskPushNotificationConfig.model_validate(PUSH)
    wire = proto_v03.push_config_out(config)
    assert wire == _parsed(v03_pb2.TaskPushNotificationConfig, V03_JSON.push_config_out(config))
    create = v03_pb2.CreateTaskPushNotificationConfigRequest(parent="tasks/t-1", config=wire)
    assert proto_v03.push_config(create) == config
    old = V03_JSON.push_config_in({**_as_dict(create), "taskId": "t-1"})
    assert proto_v03.push_config(create) == old
    create.config.push_notification_config.ClearField("id")
    create.config_id = "from-request"
    assert proto_v03.push_config(create).id == "from-request"


def test_v03_bad_push_configs_and_resource_names() -> None:
    bare = v03_pb2.CreateTaskPushNotificationConfigRequest(parent="tasks/t")
    _same_error(
        lambda: proto_v03.push_config(bare),
        lambda: V03_JSON.push_config_in({**_as_dict(bare), "taskId": "t"}),
    )
    for name in ("", "tasks", "tasks/", "task/t", "t"):
        error = _error(lambda name=name: proto_v03.resource(name, "name"))
        assert error.violations == [("name", "invalid")]
    assert proto_v03.resource("tasks/t/pushNotificationConfigs/p", "name") == ["t", "p"]
    unnamed = v03_pb2.CreateTaskPushNotificationConfigRequest(parent="nope")
    assert _error(lambda: proto_v03.push_config(unnamed)).violations == [("parent", "invalid")]


def test_v03_states_use_the_v03_spelling() -> None:
    for event in EVENTS[2:5]:
        model = StreamResponse.model_validate(event)
        assert model.status_update is not None
        wire = proto_v03.event_out(model, closes_at_interrupt=True)
        name = v03_pb2.TaskState.Name(wire.status_update.status.state)
        assert name == V03_JSON.state_out(model.status_update.status.state)
    assert proto_v03.event_out(
        StreamResponse.model_validate(EVENTS[4]), closes_at_interrupt=False
    ).status_update.final
