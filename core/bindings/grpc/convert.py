"""Protobuf <-> our wire dicts, in one place.

Our wire models are the ProtoJSON of the same protos (camelCase, enum names, RFC 3339
timestamps, base64 bytes, defaults left out), so a request message becomes exactly the params
a JSON-RPC call carries, and a handler's result dict parses straight into the response
message. The bindings above this never see a protobuf field.
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message
from google.protobuf.message_factory import GetMessageClass

from core.wire.jsonrpc import Encoded


def params_of(request: Message) -> dict[str, Any]:
    """The request as its ProtoJSON object (what the JSON bindings receive)."""
    params: dict[str, Any] = json_format.MessageToDict(request)
    return params


def message_of(result: Any, descriptor: Descriptor) -> Message:
    """A handler's ProtoJSON result (a dict, or JSON text already encoded) as the response
    message (`None` is the empty message).

    Keys the message does not have are dropped: the v0.3-compatible card carries fields the
    v1.0 `AgentCard` lacks."""
    message = GetMessageClass(descriptor)()
    if isinstance(result, Encoded):
        json_format.Parse(result.json, message, ignore_unknown_fields=True)
    elif result is not None:
        json_format.ParseDict(result, message, ignore_unknown_fields=True)
    return message


def message_class(descriptor: Descriptor) -> type[Message]:
    cls: type[Message] = GetMessageClass(descriptor)
    return cls
