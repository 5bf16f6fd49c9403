"""What a method handler receives and may return, shared by every binding and version."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from core.api.card import CardView
from core.api.operations import Operations
from core.wire.codecs.codec import encoded, parse

__all__ = ["Call", "Streaming", "encoded", "parse"]


@dataclass(frozen=True)
class Call:
    ops: Operations
    principal: str
    # What the binding decoded the request to: a JSON object, or a gRPC request message (the
    # caller's codec reads it).
    params: Any
    card: CardView


@dataclass(frozen=True)
class Streaming:
    """A streaming result: already-encoded events (the version's wire dicts, or protobuf
    messages on gRPC), in order."""

    events: AsyncIterator[Any]
