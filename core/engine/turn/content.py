"""Conversions between wire parts and the backend's neutral content."""

from __future__ import annotations

import base64

from core.backend import Content, DataContent, FileContent, TextContent
from core.wire.models import Part


def part_to_content(part: Part) -> Content:
    if part.text is not None:
        return TextContent(part.text)
    if part.raw is not None:
        return FileContent(
            data=base64.b64decode(part.raw), name=part.filename, media_type=part.media_type
        )
    if part.url is not None:
        return FileContent(url=part.url, name=part.filename, media_type=part.media_type)
    return DataContent(part.data)


def content_to_part(content: Content) -> Part:
    if isinstance(content, TextContent):
        return Part(text=content.text)
    if isinstance(content, FileContent):
        if content.data is not None:
            return Part(
                raw=base64.b64encode(content.data).decode(),
                filename=content.name,
                media_type=content.media_type,
            )
        return Part(url=content.url, filename=content.name, media_type=content.media_type)
    return Part(data=content.data)


def joined_text(parts: list[Part]) -> list[Part]:
    """Runs of plain text parts (text and nothing else) as one text part each: a streamed
    artifact's chunks, stored whole once its last chunk is in."""
    joined: list[Part] = []
    for part in parts:
        last = joined[-1] if joined else None
        if last is not None and _plain_text(last) and _plain_text(part):
            joined[-1] = Part(text=f"{last.text}{part.text}")
        else:
            joined.append(part)
    return joined


def _plain_text(part: Part) -> bool:
    return part.text is not None and part.model_fields_set <= {"text"}
