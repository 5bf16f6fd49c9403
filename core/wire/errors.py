"""Every error the daemon can put on the wire, and the one table that says how.

Raise a `DaemonError` subclass anywhere; the bindings render it with `jsonrpc_error()` or
`rest_error()`. Unknown exceptions become `InternalError` carrying only an opaque error id.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from pydantic import ValidationError

Dialect = Literal["1.0", "0.3"]

ERROR_DOMAIN = "a2a-protocol.org"
ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo"
BAD_REQUEST_TYPE = "type.googleapis.com/google.rpc.BadRequest"


class DaemonError(Exception):
    """Base of every error with a wire form. `message` is safe to show to the caller."""

    default_message: ClassVar[str] = "Internal error"

    def __init__(
        self,
        message: str | None = None,
        *,
        violations: list[tuple[str, str]] | None = None,
        metadata: dict[str, str] | None = None,
    ) -> None:
        self.message = message or self.default_message
        self.violations = violations or []
        self.metadata = metadata or {}
        super().__init__(self.message)


class ParseError(DaemonError):
    default_message = "Invalid JSON payload"


class InvalidRequestError(DaemonError):
    default_message = "Invalid Request"


class PayloadTooLargeError(InvalidRequestError):
    default_message = "Request body too large"


class UriTooLongError(InvalidRequestError):
    default_message = "The request's URI is too long"


class MethodNotFoundError(DaemonError):
    default_message = "Method not found"


class MethodNotAllowedError(MethodNotFoundError):
    default_message = "Method not allowed"


class InvalidParamsError(DaemonError):
    default_message = "Invalid params"


class InternalError(DaemonError):
    default_message = "Internal error"


class StorageUnavailableError(InternalError):
    """The daemon's database cannot be reached now (PostgreSQL down or cut off): retryable."""

    default_message = (
        "The daemon's storage is unavailable right now (its database cannot be reached); "
        "try again shortly"
    )


class TaskNotFoundError(DaemonError):
    default_message = "Task not found"


class TaskUnreadableError(TaskNotFoundError):
    """The task is stored but its record cannot be decoded (the daemon logs which)."""

    default_message = (
        "The task cannot be read from the daemon's storage (its record is damaged), "
        "so it is treated as not found"
    )


class TaskNotCancelableError(DaemonError):
    default_message = "Task cannot be canceled"


class PushNotificationNotSupportedError(DaemonError):
    default_message = "Push Notification is not supported"


class UnsupportedOperationError(DaemonError):
    default_message = "This operation is not supported"


class BusyError(UnsupportedOperationError):
    """Too many turns are queued (a context's or the daemon's): the same message may succeed
    later, so gRPC says RESOURCE_EXHAUSTED (retryable), not UNIMPLEMENTED."""

    default_message = "Too many turns are queued; retry later"


class BudgetExceededError(UnsupportedOperationError):
    """A budget (`budget.*`) is spent: the message is refused before anything is stored."""

    default_message = "A budget of this daemon is spent"


class ContentTypeNotSupportedError(DaemonError):
    default_message = "Incompatible content types"


class InvalidAgentResponseError(DaemonError):
    default_message = "Invalid agent response"


class ExtendedAgentCardNotConfiguredError(DaemonError):
    default_message = "Extended agent card is not configured"


class ExtensionSupportRequiredError(DaemonError):
    default_message = "Extension support required"


class VersionNotSupportedError(DaemonError):
    default_message = "Version not supported"


@dataclass(frozen=True)
class WireForm:
    """How one error looks in each binding (A2A v1.0 §5.4; v0.3 codes for the old dialect)."""

    code: int
    reason: str
    http_status: int
    rpc_status: str
    v03_code: int


ERROR_TABLE: dict[type[DaemonError], WireForm] = {
    ParseError: WireForm(-32700, "PARSE_ERROR", 400, "INVALID_ARGUMENT", -32700),
    InvalidRequestError: WireForm(-32600, "INVALID_REQUEST", 400, "INVALID_ARGUMENT", -32600),
    PayloadTooLargeError: WireForm(-32600, "INVALID_REQUEST", 413, "INVALID_ARGUMENT", -32600),
    UriTooLongError: WireForm(-32600, "INVALID_REQUEST", 414, "INVALID_ARGUMENT", -32600),
    MethodNotFoundError: WireForm(-32601, "METHOD_NOT_FOUND", 404, "NOT_FOUND", -32601),
    MethodNotAllowedError: WireForm(-32601, "METHOD_NOT_FOUND", 405, "UNIMPLEMENTED", -32601),
    InvalidParamsError: WireForm(-32602, "INVALID_PARAMS", 400, "INVALID_ARGUMENT", -32602),
    InternalError: WireForm(-32603, "INTERNAL_ERROR", 500, "INTERNAL", -32603),
    StorageUnavailableError: WireForm(-32603, "STORAGE_UNAVAILABLE", 503, "UNAVAILABLE", -32603),
    TaskNotFoundError: WireForm(-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND", -32001),
    TaskUnreadableError: WireForm(-32001, "TASK_NOT_FOUND", 404, "NOT_FOUND", -32001),
    TaskNotCancelableError: WireForm(
        -32002, "TASK_NOT_CANCELABLE", 409, "FAILED_PRECONDITION", -32002
    ),
    PushNotificationNotSupportedError: WireForm(
        -32003, "PUSH_NOTIFICATION_NOT_SUPPORTED", 400, "UNIMPLEMENTED", -32003
    ),
    UnsupportedOperationError: WireForm(
        -32004, "UNSUPPORTED_OPERATION", 400, "UNIMPLEMENTED", -32004
    ),
    BusyError: WireForm(-32004, "UNSUPPORTED_OPERATION", 429, "RESOURCE_EXHAUSTED", -32004),
    BudgetExceededError: WireForm(
        -32004, "UNSUPPORTED_OPERATION", 429, "RESOURCE_EXHAUSTED", -32004
    ),
    ContentTypeNotSupportedError: WireForm(
        -32005, "CONTENT_TYPE_NOT_SUPPORTED", 415, "INVALID_ARGUMENT", -32005
    ),
    InvalidAgentResponseError: WireForm(-32006, "INVALID_AGENT_RESPONSE", 502, "INTERNAL", -32006),
    ExtendedAgentCardNotConfiguredError: WireForm(
        -32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED", 400, "FAILED_PRECONDITION", -32007
    ),
    # v0.3 has no code for these two; its clients get the closest standard one.
    ExtensionSupportRequiredError: WireForm(
        -32008, "EXTENSION_SUPPORT_REQUIRED", 400, "FAILED_PRECONDITION", -32600
    ),
    VersionNotSupportedError: WireForm(
        -32009, "VERSION_NOT_SUPPORTED", 400, "UNIMPLEMENTED", -32603
    ),
}

# Errors raised before a method is known carry no details, as the reference SDK does.
_BARE = (ParseError, MethodNotFoundError)


def wire_form(error: DaemonError) -> WireForm:
    """The table entry of the error's class or of its nearest listed ancestor."""
    for cls in type(error).__mro__:
        form = ERROR_TABLE.get(cls)
        if form is not None:
            return form
    return ERROR_TABLE[InternalError]


def protocol_name(error: DaemonError) -> str:
    """The protocol's name for the error: its most general listed class (a subclass that only
    refines the message or HTTP status keeps its parent's name)."""
    listed = [cls for cls in type(error).__mro__ if cls in ERROR_TABLE]
    return listed[-1].__name__ if listed else InternalError.__name__


def _details(error: DaemonError, form: WireForm) -> list[dict[str, Any]]:
    details: list[dict[str, Any]] = [
        {
            "@type": ERROR_INFO_TYPE,
            "reason": form.reason,
            "domain": ERROR_DOMAIN,
            "metadata": dict(error.metadata),
        }
    ]
    if error.violations:
        details.append(
            {
                "@type": BAD_REQUEST_TYPE,
                "fieldViolations": [
                    {"field": field, "description": text} for field, text in error.violations
                ],
            }
        )
    return details


def jsonrpc_error(error: DaemonError, dialect: Dialect) -> dict[str, Any]:
    """The `error` member of a JSON-RPC response in the caller's dialect."""
    form = wire_form(error)
    if dialect == "0.3":
        body: dict[str, Any] = {"code": form.v03_code, "message": error.message}
        if error.violations:
            body["data"] = [{"field": f, "description": d} for f, d in error.violations]
        return body
    body = {"code": form.code, "message": error.message}
    if not isinstance(error, _BARE):
        body["data"] = _details(error, form)
    return body


def rest_error(error: DaemonError) -> tuple[int, dict[str, Any]]:
    """HTTP status and `google.rpc.Status` body (v1.0 §11.6; also used for v0.3 REST)."""
    form = wire_form(error)
    return form.http_status, {
        "error": {
            "code": form.http_status,
            "status": form.rpc_status,
            "message": error.message,
            "details": _details(error, form),
        }
    }


def from_validation(exc: Exception, prefix: str = "") -> InvalidParamsError:
    """Turn a pydantic ValidationError into InvalidParams with one violation per field."""
    if not isinstance(exc, ValidationError):
        return InvalidParamsError(str(exc))
    violations = []
    for item in exc.errors(include_url=False):
        path = ".".join(str(p) for p in item["loc"])
        field = f"{prefix}.{path}" if prefix and path else (prefix or path)
        violations.append((field, item["msg"]))
    first_field, first_msg = violations[0] if violations else ("", "invalid")
    message = f"Invalid params: {first_field}: {first_msg}" if first_field else "Invalid params"
    return InvalidParamsError(message, violations=violations)
