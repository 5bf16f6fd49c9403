"""A turn's parts as the user message Claude Code reads on stdin (stream-json input)."""

from __future__ import annotations

import base64
import json
import uuid
from collections.abc import Iterable
from typing import Any

from core.backend import Content, DataContent, FileContent, TextContent, Turn

IMAGE_TYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
TEXT_FILE_LIMIT = 200_000
"""Bytes of an inline text file given to the model as text."""


def user_message(turn: Turn) -> dict[str, Any]:
    """The stream-json user message for `turn`. Its fresh `uuid` lets the CLI tell it apart."""
    return parts_message(turn.parts)


def parts_message(parts: Iterable[Content]) -> dict[str, Any]:
    """The stream-json user message carrying `parts`, with a fresh `uuid` (the CLI echoes it
    back when it takes the message: `replay-user-messages`)."""
    return {
        "type": "user",
        "message": {"role": "user", "content": [_block(part) for part in parts]},
        "parent_tool_use_id": None,
        "uuid": str(uuid.uuid4()),
    }


def _block(part: Content) -> dict[str, Any]:
    match part:
        case TextContent(text=text):
            return {"type": "text", "text": text}
        case DataContent(data=data):
            return {"type": "text", "text": json.dumps(data, ensure_ascii=False)}
        case FileContent():
            return _file(part)
    raise TypeError(f"unknown content {type(part).__name__}")


def _file(part: FileContent) -> dict[str, Any]:
    name = part.name or "attachment"
    media_type = part.media_type or "application/octet-stream"
    if part.data is None:
        return {"type": "text", "text": f"Attached file {name} ({media_type}): {part.url}"}
    if media_type in IMAGE_TYPES:
        data = base64.b64encode(part.data).decode("ascii")
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
    if len(part.data) <= TEXT_FILE_LIMIT:
        try:
            text = part.data.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            return {"type": "text", "text": f"Attached file {name} ({media_type}):\n{text}"}
    return {
        "type": "text",
        "text": f"[Attached file {name} ({media_type}, {len(part.data)} bytes) cannot be shown]",
    }
