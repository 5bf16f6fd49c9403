"""ProtoJSON conventions shared by every v1 wire model.

Output is camelCase with defaults left out; input also accepts snake_case names and ignores
unknown fields (A2A v1.0 §5.5, §5.7).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, PlainSerializer
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """Base for wire bodies: camelCase out, camelCase or snake_case in, unknown keys ignored.

    Frozen: a model is never changed in place, so it can be shared (a task snapshot with
    every stream, the store and the push intake) without copies; a change is a new model,
    `model_copy(update=...)`."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="ignore",
        strict=False,
        frozen=True,
    )

    def dump(self) -> dict[str, Any]:
        """ProtoJSON rendering: camelCase keys, no unset or null fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def dump_json(self) -> bytes:
        """`dump()` as JSON text, encoded in one step (no dict in between); a non-finite
        number is written as null, as `strict_json.dumps` writes it."""
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True)


def _parse_timestamp(value: object) -> datetime:
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    else:
        # pydantic reports a ValueError as a field error (InvalidParams); a TypeError escapes.
        raise ValueError("timestamp must be an RFC 3339 string")  # noqa: TRY004
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def format_timestamp(value: datetime) -> str:
    """RFC 3339 in UTC with millisecond precision and a `Z` suffix (§5.6.1)."""
    if value.tzinfo is not UTC:
        value = value.astimezone(UTC)
    # isoformat is C code; "...SS.mmm+00:00" minus the offset (milliseconds are truncated).
    return value.isoformat(timespec="milliseconds")[:23] + "Z"


Timestamp = Annotated[
    datetime,
    BeforeValidator(_parse_timestamp),
    PlainSerializer(format_timestamp, return_type=str, when_used="json"),
]


def utcnow() -> datetime:
    return datetime.now(UTC)
