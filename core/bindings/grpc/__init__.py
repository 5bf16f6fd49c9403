"""The gRPC binding (A2A §10): the v1.0 `lf.a2a.v1.A2AService` and the v0.3 `a2a.v1.A2AService`
on `server.grpcPort`, both calling the same `Operations` as the HTTP bindings.

`protos` names the generated messages; `proto_v1` and `proto_v03` turn each version's
messages into the v1 wire models and back, field by field; `methods` is one table per service
version (RPC name -> decode, operation, encode); `status` renders errors as
`google.rpc.Status`; `server` the servicer, its auth and negotiation, and its lifecycle.
"""
