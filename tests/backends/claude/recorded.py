"""Turns recorded from the real Claude Code CLI (see record.py), replayed through the mapping."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from claude_agent_sdk import Message, ResultMessage

# The SDK's own parser, the one ClaudeSDKClient applies to these very frames. It is internal to
# the SDK, whose version is pinned exactly; a change in it shows up here first.
from claude_agent_sdk._internal.message_parser import parse_message

from core.backend import BackendEvent, TextDelta
from wrappers.claude.events import TurnState, map_message

RECORDINGS = Path(__file__).resolve().parent / "recordings"


def frames(name: str) -> list[dict[str, Any]]:
    lines = (RECORDINGS / f"{name}.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def messages(name: str) -> list[Message]:
    parsed = (parse_message(frame) for frame in frames(name))
    return [m for m in parsed if m is not None]


def replay(
    recorded: Iterable[Message], state: TurnState | None = None
) -> tuple[TurnState, list[BackendEvent]]:
    state = state or TurnState()
    events: list[BackendEvent] = []
    for message in recorded:
        state, more = map_message(state, message)
        events += more
    return state, events


def result_of(name: str) -> ResultMessage:
    return next(m for m in messages(name) if isinstance(m, ResultMessage))


def text_of(events: Iterable[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))
