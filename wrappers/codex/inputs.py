"""A turn's parts as Codex `turn/start` input items (pure)."""

from __future__ import annotations

import base64
import json
from typing import Any

from core.backend import Content, DataContent, FileContent, TextContent

TEXT_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml")


def input_items(parts: tuple[Content, ...]) -> list[dict[str, Any]]:
    """Text stays text; images go as images (inline ones as data URLs); other files as their
    text when they have one, else as a note naming them; data parts as JSON text."""
    items: list[dict[str, Any]] = []
    for part in parts:
        match part:
            case TextContent(text=text):
                items.append(_text(text))
            case DataContent(data=data):
                items.append(_text(json.dumps(data, ensure_ascii=False, indent=2)))
            case FileContent():
                items.append(_file(part))
    return items or [_text("")]


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text, "text_elements": []}


def _file(part: FileContent) -> dict[str, Any]:
    media = (part.media_type or "").lower()
    name = part.name or "attachment"
    if media.startswith("image/"):
        if part.url is not None:
            return {"type": "image", "url": part.url}
        if part.data is not None:
            encoded = base64.b64encode(part.data).decode()
            return {"type": "image", "url": f"data:{media};base64,{encoded}"}
    if part.data is not None and (media.startswith("text/") or media in TEXT_TYPES or not media):
        try:
            body = part.data.decode()
        except UnicodeDecodeError:
            body = None
        if body is not None:
            return _text(f"Attached file {name}:\n{body}")
    if part.url is not None:
        return _text(f"Attached file {name} ({media or 'unknown type'}): {part.url}")
    return _text(f"Attached file {name} ({media or 'binary'}) could not be passed to Codex.")
