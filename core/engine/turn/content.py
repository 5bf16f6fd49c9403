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
