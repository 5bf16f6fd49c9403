"""The one error table: every protocol code, in every wire form."""

from __future__ import annotations

import pytest

from core.wire import errors as e

CASES = [
    (e.ParseError, -32700, -32700, 400, "INVALID_ARGUMENT", "PARSE_ERROR"),
    (e.InvalidRequestError, -32600, -32600, 400, "INVALID_ARGUMENT", "INVALID_REQUEST"),
    (e.PayloadTooLargeError, -32600, -32600, 413, "INVALID_ARGUMENT", "INVALID_REQUEST"),
    (e.UriTooLongError, -32600, -32600, 414, "INVALID_ARGUMENT", "INVALID_REQUEST"),
    (e.MethodNotFoundError, -32601, -32601, 404, "NOT_FOUND", "METHOD_NOT_FOUND"),
    (e.MethodNotAllowedError, -32601, -32601, 405, "UNIMPLEMENTED", "METHOD_NOT_FOUND"),
    (e.InvalidParamsError, -32602, -32602, 400, "INVALID_ARGUMENT", "INVALID_PARAMS"),
    (e.InternalError, -32603, -32603, 500, "INTERNAL", "INTERNAL_ERROR"),
    (e.StorageUnavailableError, -32603, -32603, 503, "UNAVAILABLE", "STORAGE_UNAVAILABLE"),
    (e.TaskNotFoundError, -32001, -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
    (e.TaskUnreadableError, -32001, -32001, 404, "NOT_FOUND", "TASK_NOT_FOUND"),
    (e.TaskNotCancelableError, -32002, -32002, 409, "FAILED_PRECONDITION", "TASK_NOT_CANCELABLE"),
    (
        e.PushNotificationNotSupportedError,
        -32003,
        -32003,
        400,
        "UNIMPLEMENTED",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    ),
    (e.UnsupportedOperationError, -32004, -32004, 400, "UNIMPLEMENTED", "UNSUPPORTED_OPERATION"),
    (e.BusyError, -32004, -32004, 429, "RESOURCE_EXHAUSTED", "UNSUPPORTED_OPERATION"),
    (e.BudgetExceededError, -32004, -32004, 429, "RESOURCE_EXHAUSTED", "UNSUPPORTED_OPERATION"),
    (
        e.ContentTypeNotSupportedError,
        -32005,
        -32005,
        415,
        "INVALID_ARGUMENT",
        "CONTENT_TYPE_NOT_SUPPORTED",
    ),
    (e.InvalidAgentResponseError, -32006, -32006, 502, "INTERNAL", "INVALID_AGENT_RESPONSE"),
    (
        e.ExtendedAgentCardNotConfiguredError,
        -32007,
        -32007,
        400,
        "FAILED_PRECONDITION",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    ),
    (
        e.ExtensionSupportRequiredError,
        -32008,
        -32600,
        400,
        "FAILED_PRECONDITION",
        "EXTENSION_SUPPORT_REQUIRED",
    ),
    (e.VersionNotSupportedError, -32009, -32603, 400, "UNIMPLEMENTED", "VERSION_NOT_SUPPORTED"),
]


def test_every_error_class_is_in_the_table() -> None:
    classes = {
        c
        for c in vars(e).values()
        if isinstance(c, type) and issubclass(c, e.DaemonError) and c is not e.DaemonError
    }
    assert classes == set(e.ERROR_TABLE)
    assert {c[0] for c in CASES} == classes


@pytest.mark.parametrize(("cls", "code", "v03", "status", "rpc_status", "reason"), CASES)
def test_wire_forms(
    cls: type[e.DaemonError], code: int, v03: int, status: int, rpc_status: str, reason: str
) -> None:
    error = cls()
    v1 = e.jsonrpc_error(error, "1.0")
    assert v1["code"] == code
    assert v1["message"] == cls.default_message
    if issubclass(cls, e.ParseError | e.MethodNotFoundError):
        assert "data" not in v1
    else:
        assert v1["data"] == [
            {
                "@type": e.ERROR_INFO_TYPE,
                "reason": reason,
                "domain": "a2a-protocol.org",
                "metadata": {},
            }
        ]
    assert e.jsonrpc_error(error, "0.3") == {"code": v03, "message": cls.default_message}
    http, body = e.rest_error(error)
    assert http == status
    assert body == {
        "error": {
            "code": status,
            "status": rpc_status,
            "message": cls.default_message,
            "details": [
                {
                    "@type": e.ERROR_INFO_TYPE,
                    "reason": reason,
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }
            ],
        }
    }


def test_violations_become_bad_request_details() -> None:
    error = e.InvalidParamsError("bad", violations=[("message.parts", "too short")])
    assert e.jsonrpc_error(error, "1.0")["data"][1] == {
        "@type": e.BAD_REQUEST_TYPE,
        "fieldViolations": [{"field": "message.parts", "description": "too short"}],
    }
    assert e.jsonrpc_error(error, "0.3")["data"] == [
        {"field": "message.parts", "description": "too short"}
    ]


def test_protocol_name_is_the_most_general_listed_class() -> None:
    assert e.protocol_name(e.TaskNotFoundError()) == "TaskNotFoundError"
    assert e.protocol_name(e.TaskUnreadableError()) == "TaskNotFoundError"
    assert e.protocol_name(e.PayloadTooLargeError()) == "InvalidRequestError"
    assert e.protocol_name(e.MethodNotAllowedError()) == "MethodNotFoundError"


def test_subclass_uses_parent_form() -> None:
    class Busy(e.UnsupportedOperationError):
        default_message = "busy"

    assert e.wire_form(Busy()).code == -32004
