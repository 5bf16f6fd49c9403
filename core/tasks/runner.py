"""Drives one backend turn and maps each BackendEvent onto the task.

The mapping (DESIGN.md §3, §5): text becomes one response artifact at the end of the turn
(`output.mode = final`) plus the completed status message; progress notes, tool calls and file
changes become WORKING status updates; NeedsInput interrupts the task; Failed ends it.
"""

from __future__ import annotations

import uuid
from typing import Any

import structlog

from core.backend import (
    ArtifactOut,
    Backend,
    BackendEvent,
    DirectReply,
    Failed,
    FileChange,
    NeedsInput,
    Progress,
    Reasoning,
    SessionBound,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
)
from core.tasks.content import content_to_part
from core.tasks.run import TaskRun, agent_message
from core.wire.enums import Role, TaskState
from core.wire.models import Artifact, Message, Part, StreamResponse

log = structlog.get_logger(__name__)

WRAPPER_METADATA_KEY = "a2aWrapper"

_FAILED_STATE = {"rejected": TaskState.REJECTED}


class TurnRunner:
    def __init__(self, backend: Backend, *, progress: bool = True) -> None:
        self._backend = backend
        self._progress = progress

    async def run(self, run: TaskRun, turn: Turn) -> None:
        """Run `turn` to its end state. Cancellation propagates; the caller finalises."""
        texts: list[str] = []
        deltas: list[str] = []
        events = self._backend.run_turn(turn)
        try:
            async for event in events:
                if isinstance(event, DirectReply) and run.first_turn and not run.announced:
                    await self._direct_reply(run, event)
                    return
                if await self._apply(run, event, texts, deltas):
                    return
        finally:
            # A turn that ends early closes the backend's generator now, not at GC time, so
            # its own cleanup (processes, sessions) runs in order.
            close = getattr(events, "aclose", None)
            if close is not None:
                await close()
        answer = "".join(texts) if texts else "".join(deltas)
        message = None
        if answer:
            parts = [Part(text=answer)]
            run.add_artifact(
                Artifact(artifact_id=str(uuid.uuid4()), name="response", parts=parts),
                append=False,
                last_chunk=True,
            )
            message = agent_message(run.task, parts)
        await run.set_status(TaskState.COMPLETED, message)

    async def _apply(
        self, run: TaskRun, event: BackendEvent, texts: list[str], deltas: list[str]
    ) -> bool:
        """Apply one event; True when it ended the turn."""
        match event:
            case Text(text=text):
                texts.append(text)
            case TextDelta(text=text):
                await self._working(run)
                deltas.append(text)
            case SessionBound(session_id=session_id):
                self._metadata(run)["sessionId"] = session_id
            case Usage():
                self._metadata(run)["usage"] = {
                    "inputTokens": event.input_tokens,
                    "outputTokens": event.output_tokens,
                    "costUsd": event.cost_usd,
                    "model": event.model,
                }
            case Progress(text=text):
                await self._working(run)
                run.progress(text)
            case ToolCall() | ToolResult() | FileChange() | Reasoning():
                await self._working(run)
                note = _describe(event)
                if self._progress and note:
                    run.progress(note)
            case ArtifactOut():
                await self._working(run)
                run.add_artifact(
                    Artifact(
                        artifact_id=event.artifact_id or str(uuid.uuid4()),
                        name=event.name,
                        parts=[content_to_part(c) for c in event.parts],
                    ),
                    append=event.append,
                    last_chunk=event.last_chunk,
                )
            case DirectReply(parts=parts):
                reply = agent_message(run.task, [content_to_part(c) for c in parts])
                await run.set_status(TaskState.COMPLETED, reply)
                return True
            case NeedsInput(question=question, kind=kind):
                state = TaskState.AUTH_REQUIRED if kind == "auth" else TaskState.INPUT_REQUIRED
                message = agent_message(run.task, [Part(text=question)]) if question else None
                await run.set_status(state, message)
                return True
            case Failed(kind=kind, message=text):
                state = _FAILED_STATE.get(kind, TaskState.FAILED)
                await run.set_status(state, agent_message(run.task, [Part(text=text)]))
                return True
        return False

    async def _working(self, run: TaskRun) -> None:
        if run.task.status.state != TaskState.WORKING:
            await run.set_status(TaskState.WORKING)

    async def _direct_reply(self, run: TaskRun, event: DirectReply) -> None:
        run.reply = Message(
            message_id=str(uuid.uuid4()),
            context_id=run.task.context_id,
            role=Role.AGENT,
            parts=[content_to_part(c) for c in event.parts],
        )
        await run.store.delete(run.principal, run.task.id)
        run.broker.publish(StreamResponse(message=run.reply))
        run.broker.close()

    def _metadata(self, run: TaskRun) -> dict[str, Any]:
        metadata = dict(run.task.metadata or {})
        wrapper = metadata.get(WRAPPER_METADATA_KEY)
        section: dict[str, Any] = dict(wrapper) if isinstance(wrapper, dict) else {}
        section.setdefault("backend", self._backend.name)
        metadata[WRAPPER_METADATA_KEY] = section
        run.task.metadata = metadata
        return section


def _describe(event: ToolCall | ToolResult | FileChange | Reasoning) -> str:
    match event:
        case ToolCall(name=name):
            return f"Running tool {name}"
        case ToolResult(is_error=True, call_id=call_id):
            return f"Tool call {call_id} failed"
        case FileChange(path=path, kind=kind):
            return f"File {kind}: {path}"
    return ""
