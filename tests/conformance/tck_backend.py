"""`TckBackend`: the behaviour the official A2A conformance kit (TCK) expects of an agent.

It never calls a coding agent. A v1.0 kit run names the behaviour it wants in the messageId
prefix (`tck-<name>-<hex>`); the v0.3 kit expects every message to leave the task
INPUT_REQUIRED, except `test-resubscribe-message-id*`, which must keep producing events for
a few seconds (../shared/docs/tck.md §4). The daemon config is `tests/conformance/tck.json`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import anyio

from core.backend import (
    ArtifactOut,
    BackendEvent,
    Content,
    DataContent,
    Diagnosis,
    DirectReply,
    Failed,
    FileContent,
    NeedsInput,
    Progress,
    SessionBound,
    Text,
    TextContent,
    Turn,
)
from core.backend.base import BackendBase

RESUBSCRIBE_PREFIX = "test-resubscribe-message-id"
HEARTBEAT_SECONDS = 0.5
RESUBSCRIBE_SECONDS = 5.0
V03_WORK_SECONDS = 0.2

_FILE = FileContent(data=b"tck", name="output.txt", media_type="text/plain")
_FILE_URL = FileContent(
    url="https://example.com/output.txt", name="output.txt", media_type="text/plain"
)


def _artifact(*parts: Content) -> list[BackendEvent]:
    return [Progress("Working"), ArtifactOut(parts=parts, name="output")]


def _chunked() -> list[BackendEvent]:
    return [
        Progress("Working"),
        ArtifactOut(parts=(TextContent("chunk-1 "),), artifact_id="chunked", name="output"),
        ArtifactOut(
            parts=(TextContent("chunk-2"),), artifact_id="chunked", append=True, last_chunk=True
        ),
    ]


# Longer prefixes first: `tck-artifact-file-url` before `tck-artifact-file`.
_SCRIPTS: list[tuple[str, Callable[[], list[BackendEvent]]]] = [
    ("tck-complete-task", lambda: [Text("Hello from TCK")]),
    ("tck-input-required", lambda: [NeedsInput("Please provide more input")]),
    ("tck-artifact-text", lambda: _artifact(TextContent("Generated text content"))),
    ("tck-artifact-file-url", lambda: _artifact(_FILE_URL)),
    ("tck-artifact-file", lambda: _artifact(_FILE)),
    ("tck-artifact-data", lambda: _artifact(DataContent({"key": "value", "count": 42}))),
    ("tck-message-response", lambda: [DirectReply((TextContent("Direct message response"),))]),
    ("tck-reject-task", lambda: [Failed("rejected", "rejected")]),
    ("tck-stream-artifact-text", lambda: _artifact(TextContent("Streamed text content"))),
    ("tck-stream-artifact-file", lambda: _artifact(_FILE)),
    ("tck-stream-artifact-chunked", _chunked),
    ("tck-stream-001", lambda: _artifact(TextContent("Stream hello from TCK"))),
    ("tck-stream-002", lambda: []),
    ("tck-stream-003", lambda: _artifact(TextContent("Stream task lifecycle"))),
    ("tck-stream-ordering-001", lambda: _artifact(TextContent("Ordered output"))),
    ("tck-", lambda: [Text("Hello from TCK")]),
]


class TckBackend(BackendBase):
    name = "tck"

    def __init__(self, options: Mapping[str, Any] | None = None) -> None:
        self._options = dict(options or {})

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        yield SessionBound(f"tck-{turn.context_id}")
        message_id = turn.message_id
        if message_id.startswith(RESUBSCRIBE_PREFIX):
            beats = int(RESUBSCRIBE_SECONDS / HEARTBEAT_SECONDS)
            for beat in range(beats):
                yield Progress(f"heartbeat {beat + 1}/{beats}")
                await anyio.sleep(HEARTBEAT_SECONDS)
            yield Text("Resubscribe test finished")
            return
        for prefix, script in _SCRIPTS:
            if message_id.startswith(prefix):
                for event in script():
                    yield event
                return
        yield Progress("Processing your question")
        await anyio.sleep(V03_WORK_SECONDS)
        yield NeedsInput("Hello world!")

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("backend", ok=True, detail="in-process, nothing to check")]
