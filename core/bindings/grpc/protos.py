"""The generated protobuf code of both gRPC services, as the official a2a-sdk ships it.

We use the SDK's modules (a pinned runtime dependency) rather than generating our own from
`a2a.proto`: the SDK is the reference the bindings are tested against, and a second copy of
the same `.proto` files registered in the process-wide descriptor pool would clash with the
SDK's wherever both are imported (the interop tests import both). Besides the binding, only
`core.wire.signing` uses them (the `AgentCard` message defines the card's canonical form).
"""

from __future__ import annotations

from a2a.compat.v0_3 import a2a_v0_3_pb2 as v03_pb2
from a2a.types import a2a_pb2 as v1_pb2
from google.protobuf.descriptor import ServiceDescriptor

__all__ = ["V03_SERVICE", "V1_SERVICE", "v03_pb2", "v1_pb2"]

V1_SERVICE: ServiceDescriptor = v1_pb2.DESCRIPTOR.services_by_name["A2AService"]
V03_SERVICE: ServiceDescriptor = v03_pb2.DESCRIPTOR.services_by_name["A2AService"]
