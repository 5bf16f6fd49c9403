"""One codec per A2A protocol version: `v1` (ProtoJSON of the v1.0 proto) and `v03` (v0.3 in
its JSON-RPC and ProtoJSON shapes), both satisfying `codec.Codec`."""
