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


def _redact(parts: list[Part]) -> list[Part]:
    # Wire models are frozen: a hook returns changed copies.
    return [
        p.model_copy(update={"text": p.text.replace(SENSITIVE, "[redacted]")}) if p.text else p
        for p in parts
    ]


async def redact(
    turn: Turn, event: BackendEvent | None, out: StreamResponse
) -> StreamResponse | Literal["drop"] | None:
    if isinstance(event, ToolCall):
        return "drop"  # tool calls are audited on the server, never sent
    update = out.status_update
    if update is not None and update.status.message is not None:
        message = update.status.message
        status = update.status.model_copy(
            update={"message": message.model_copy(update={"parts": _redact(message.parts)})}
        )
        return out.model_copy(
            update={"status_update": update.model_copy(update={"status": status})}
        )
    artifact_update = out.artifact_update
    if artifact_update is not None:
        artifact = artifact_update.artifact
        artifact = artifact.model_copy(update={"parts": _redact(artifact.parts)})
        return out.model_copy(
            update={"artifact_update": artifact_update.model_copy(update={"artifact": artifact})}
        )
    return out


async def reviewed(turn: Turn, status: TaskStatus) -> TaskStatus | None:
    message = status.message
    if message is not None and message.parts[0].text:
        first = message.parts[0].model_copy(update={"text": message.parts[0].text + " (reviewed)"})
        message = message.model_copy(update={"parts": [first, *message.parts[1:]]})
        return status.model_copy(update={"message": message})
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
