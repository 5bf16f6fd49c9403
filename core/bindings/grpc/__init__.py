"""The gRPC binding (A2A §10): the v1.0 `lf.a2a.v1.A2AService` and the v0.3 `a2a.v1.A2AService`
on `server.grpcPort`, both calling the same engine service as the HTTP bindings.

`protos` names the generated messages, `convert` is the one place protobuf meets our wire
dicts, `status` renders errors as `google.rpc.Status`, `methods_v03` holds the v0.3 operations
(the v1.0 ones are the JSON-RPC table: the proto RPCs are the JSON-RPC methods), `server` the
servicer, its auth and negotiation, and its lifecycle.
"""
