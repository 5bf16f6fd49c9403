"""One prompt's way in and out: the turn's parts as ACP content blocks, and what the
prompt's response (or its failure) means for the turn."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp.schema import (
    ImageContentBlock,
    PromptResponse,
    ResourceContentBlock,
    TextContentBlock,
)

from core.backend import Failed, FileContent, TextContent, Turn, Usage, safe_failure


@dataclass(frozen=True)
class PromptDone:
    response: PromptResponse | None
    error: BaseException | None


_STOPPED: dict[str, Failed] = {
    "refusal": Failed("rejected", "The agent refused the prompt."),
    "max_tokens": Failed("error", "The agent stopped: the model reached its output token limit."),
    "max_turn_requests": Failed(
        "error", "The agent stopped: it reached its limit of model requests."
    ),
}


def prompt_outcome(done: PromptDone, *, agent_alive: bool) -> Failed | Usage | None:
    """What the prompt's response means for the turn: nothing more (it ended), its usage,
    or why it failed."""
    response = done.response
    if response is None:
        if isinstance(done.error, ConnectionError) or not agent_alive:
            return Failed(
                "error",
                "The agent process exited during the turn; the next turn starts a new one.",
            )
        return safe_failure(
            "error",
            "The agent could not complete the turn.",
            event="acp.prompt_failed",
            exc=done.error,
        )
    stopped = _STOPPED.get(response.stop_reason)
    if stopped is not None:
        return stopped
    usage = response.usage
    if usage is not None:
        return Usage(
            input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
        )
    return None


def prompt_blocks(turn: Turn, *, images: bool = False) -> list[Any]:
    """The turn's parts as ACP blocks; an inline image only where the agent takes images
    (`images`: its `promptCapabilities.image`)."""
    blocks: list[Any] = []
    for part in turn.parts:
        if isinstance(part, TextContent) and part.text:
            blocks.append(TextContentBlock(type="text", text=part.text))
        elif isinstance(part, FileContent) and part.data is not None and images:
            media = part.media_type or ""
            if media.startswith("image/"):
                data = base64.b64encode(part.data).decode()
                blocks.append(ImageContentBlock(type="image", data=data, mime_type=media))
        elif isinstance(part, FileContent) and part.url:
            name = part.name or Path(part.url).name or "file"
            blocks.append(
                ResourceContentBlock(
                    type="resource_link", uri=part.url, name=name, mime_type=part.media_type
                )
            )
    if not blocks:
        blocks.append(TextContentBlock(type="text", text=turn.text or "(no text)"))
    return blocks
