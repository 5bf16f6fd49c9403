"""Errors as `google.rpc.Status` (A2A §10.6): the code from the one error table
(`core.wire.errors`), the caller-safe message, an `ErrorInfo` detail (and `BadRequest` with
the field violations), carried in the `grpc-status-details-bin` trailer as gRPC's rich
status model does."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2

from core.wire.errors import ERROR_DOMAIN, DaemonError, Dialect, protocol_name, wire_form

DETAILS_KEY = "grpc-status-details-bin"


def rpc_status(
    error: DaemonError, dialect: Dialect
) -> tuple[grpc.StatusCode, str, tuple[tuple[str, bytes], ...]]:
    """The status code, message and trailing metadata to abort a call with. v0.3 clients read
    the error's type from the message (`TaskNotFoundError: ...`, as the v0.3 SDK sent it)."""
    form = wire_form(error)
    code = grpc.StatusCode[form.rpc_status]
    message = error.message if dialect == "1.0" else f"{protocol_name(error)}: {error.message}"
    status = status_pb2.Status(code=code_pb2.Code.Value(form.rpc_status), message=message)
    info = error_details_pb2.ErrorInfo(
        reason=form.reason, domain=ERROR_DOMAIN, metadata=dict(error.metadata)
    )
    status.details.add().Pack(info)
    if error.violations:
        bad = error_details_pb2.BadRequest(
            field_violations=[
                error_details_pb2.BadRequest.FieldViolation(field=field, description=text)
                for field, text in error.violations
            ]
        )
        status.details.add().Pack(bad)
    return code, message, ((DETAILS_KEY, status.SerializeToString()),)
