"""What a gRPC error carries in its `google.rpc.Status` trailer (the error table's ErrorInfo)."""

from __future__ import annotations

from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2


def error_reason(error: grpc.RpcError) -> str:
    """The ErrorInfo reason of the status details (the A2A domain's), asserting it is there."""
    trailers: Any = error.trailing_metadata()
    details = next(v for k, v in trailers or () if k == "grpc-status-details-bin")
    status = status_pb2.Status.FromString(details)
    info = error_details_pb2.ErrorInfo()
    assert status.details[0].Unpack(info)
    assert info.domain == "a2a-protocol.org"
    return str(info.reason)
