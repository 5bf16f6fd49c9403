"""A turn's parts as one Copilot message: the text, plus files as attachments."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from urllib.parse import unquote, urlsplit

from copilot.session import Attachment, BlobAttachment, FileAttachment

from core.backend import Content, DataContent, FileContent, TextContent, Turn


def build_message(turn: Turn) -> tuple[str, list[Attachment]]:
    """The turn's message (build_prompt of its parts)."""
    return build_prompt(turn.parts)


def build_prompt(parts: tuple[Content, ...]) -> tuple[str, list[Attachment]]:
    """Text parts become the prompt; inline files become blob attachments, `file://` URLs file
    attachments, other URLs and data parts are written into the prompt."""
    texts: list[str] = []
    attachments: list[Attachment] = []
    for part in parts:
        match part:
            case TextContent(text=text):
                texts.append(text)
            case DataContent(data=data):
                texts.append("```json\n" + json.dumps(data, indent=2) + "\n```")
            case FileContent(data=bytes() as data):
                blob: BlobAttachment = {
                    "type": "blob",
                    "data": base64.b64encode(data).decode("ascii"),
                    "mimeType": part.media_type or "application/octet-stream",
                }
                if part.name:
                    blob["displayName"] = part.name
                attachments.append(blob)
            case FileContent(url=str() as url):
                target = urlsplit(url)
                if target.scheme == "file":
                    file: FileAttachment = {"type": "file", "path": unquote(target.path)}
                    file["displayName"] = part.name or Path(unquote(target.path)).name
                    attachments.append(file)
                else:
                    texts.append(f"Attached file{f' {part.name}' if part.name else ''}: {url}")
    return "\n\n".join(texts), attachments
