"""The gRPC binding (A2A §10): the v1.0 `lf.a2a.v1.A2AService` and the v0.3 `a2a.v1.A2AService`
on `server.grpcPort`, both calling the same `Operations` as the HTTP bindings.

`protos` names the generated messages; `proto_v1` and `proto_v03` turn each version's
messages into the v1 wire models and back, field by field; `codecs` are the two protobuf
codecs the one method table (core/api/methods.py) runs each RPC with; `status` renders errors
as `google.rpc.Status`; `server` the servicer (RPC name -> row of the method table), its auth
and negotiation, and its lifecycle.
"""
