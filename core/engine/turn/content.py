"""Conversions between wire parts and the backend's neutral content."""

from __future__ import annotations

import base64

from core.backend import Content, DataContent, FileContent, TextContent
from core.wire.enums import Role
from core.wire.ids import new_id
from core.wire.models import Artifact, Message, Part, Task, TaskArtifactUpdateEvent


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


def with_artifact(artifacts: list[Artifact], update: TaskArtifactUpdateEvent) -> list[Artifact]:
    """`artifacts` with `update` applied: a new artifact added, an existing one replaced, or
    (`append`) extended; the stream carries each chunk, the stored task holds the text whole
    once the last chunk came."""
    artifacts = list(artifacts)
    existing = next(
        (i for i, a in enumerate(artifacts) if a.artifact_id == update.artifact.artifact_id),
        None,
    )
    if update.append and existing is not None:
        parts = [*artifacts[existing].parts, *update.artifact.parts]
        parts = joined_text(parts) if update.last_chunk else parts
        artifacts[existing] = artifacts[existing].model_copy(update={"parts": parts})
    elif existing is not None:
        artifacts[existing] = update.artifact
    else:
        artifacts.append(update.artifact)
    return artifacts


def agent_message(task: Task, parts: list[Part]) -> Message:
    """A message of the agent's in `task` (a status message)."""
    context, task_id = task.context_id, task.id
    return Message(
        message_id=new_id(), context_id=context, task_id=task_id, role=Role.AGENT, parts=parts
    )
