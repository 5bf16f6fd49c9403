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
    params: dict[str, Any]
    card: CardView


@dataclass(frozen=True)
class Streaming:
    """A streaming result: already-encoded events (the version's wire dicts), in order."""

    events: AsyncIterator[dict[str, Any]]
