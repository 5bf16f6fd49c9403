"""What a method handler receives and may return, shared by every binding and dialect."""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from core.api.card import CardView
from core.api.operations import Operations
from core.wire.errors import from_validation
from core.wire.models import StreamResponse

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Call:
    ops: Operations
    principal: str
    params: dict[str, Any]
    card: CardView


@dataclass(frozen=True)
class Streaming:
    """A streaming result: already-encoded events (dialect-specific dicts), in order."""

    events: AsyncIterator[dict[str, Any]]


async def encoded(
    stream: AsyncIterable[StreamResponse], encode: Callable[[StreamResponse], dict[str, Any]]
) -> AsyncIterator[dict[str, Any]]:
    """The stream's events in a dialect's wire form."""
    async for event in stream:
        yield encode(event)


def parse(model: type[M], params: dict[str, Any], prefix: str = "") -> M:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise from_validation(exc, prefix) from exc
