"""Policy hooks used by tests/test_hooks.py (named in configs as `tests.support.hooks:...`)."""

from __future__ import annotations

from typing import Literal

import anyio

from core.backend import BackendEvent, ToolCall, Turn
from core.wire.models import Part, StreamResponse, TaskStatus

SENSITIVE = "hunter2"


async def refuse_deploys(turn: Turn) -> str | None:
    if "deploy" in turn.text:
        return "Deploys are not allowed through this agent"
    return None


def _redact(parts: list[Part]) -> None:
    for part in parts:
        if part.text:
            part.text = part.text.replace(SENSITIVE, "[redacted]")


async def redact(
    turn: Turn, event: BackendEvent | None, out: StreamResponse
) -> StreamResponse | Literal["drop"] | None:
    if isinstance(event, ToolCall):
        return "drop"  # tool calls are audited on the server, never sent
    if out.status_update is not None and out.status_update.status.message is not None:
        _redact(out.status_update.status.message.parts)
    if out.artifact_update is not None:
        _redact(out.artifact_update.artifact.parts)
    return out


async def reviewed(turn: Turn, status: TaskStatus) -> TaskStatus | None:
    if status.message is not None and status.message.parts[0].text:
        status.message.parts[0].text += " (reviewed)"
    return status


async def explode(*args: object) -> None:
    raise RuntimeError("hook bug")


async def hang(*args: object) -> None:
    await anyio.sleep_forever()


async def nothing(*args: object) -> None:
    return None


async def drop_everything(*args: object) -> str:
    return "drop"


def not_async(turn: Turn) -> None:
    return None
