"""Drives one backend turn and maps each BackendEvent onto the task.

The mapping (DESIGN.md §3, §5): text becomes one response artifact at the end of the turn
(`output.mode = final`), or streams into it as chunks (`stream`), plus the completed status
message; progress notes, tool calls and file changes become WORKING status updates;
NeedsInput interrupts the task; Failed ends it. `idle` bounds the wait for each event.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import anyio
import structlog

from core.backend import (
    ApprovalAnswer,
    ApprovalRequest,
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
    SessionReset,
    Text,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
    credentials_fix,
    new_error_id,
    with_error_id,
)
from core.backend.steps import Step, call_step, file_step, result_step
from core.engine.observer import NO_OBSERVER, TurnObserver
from core.engine.readiness import UPSTREAM_KINDS, CredentialWatch, error_section
from core.engine.task_run import TaskRun
from core.engine.turn.approvals import question
from core.engine.turn.content import agent_message, content_to_part
from core.engine.turn.guard import backend_call
from core.engine.turn.plugins import NO_TURN_HOOKS, TurnHooks
from core.wire.enums import TaskState
from core.wire.ids import new_id
from core.wire.models import Artifact, Part

log = structlog.get_logger(__name__)


OutputMode = Literal["final", "stream"]
# Events after which nothing slow follows: a streamed chunk held back may wait through them, so
# the last text chunk (not an empty one) carries lastChunk.
_INSTANT = (Text, TextDelta, Usage, SessionBound)
SessionCallback = Callable[[str], Awaitable[None]]


class IdleTimeoutError(Exception):
    """The backend produced no event within the idle timeout."""


class ApprovalTimeoutError(Exception):
    """Nobody answered an approval request within approvals.timeout (onTimeout: fail)."""


@dataclass
class _Answer:
    """The turn's text so far, and (in stream mode) the chunk held back so the last one can
    carry `lastChunk`."""

    texts: list[str] = field(default_factory=list)
    deltas: list[str] = field(default_factory=list)
    artifact_id: str = field(default_factory=new_id)
    held: str | None = None
    chunks: int = 0
    calls: dict[str, ToolCall] = field(default_factory=dict)
    """The turn's tool calls by id, so a result can say what it was the result of."""

    @property
    def text(self) -> str:
        return "".join(self.texts) if self.texts else "".join(self.deltas)


class _Events:
    """The backend's events, each awaited within `idle` s of the one before. One cancel scope
    serves the whole turn (`watch`): its deadline is set while an event is awaited and lifted
    while one is applied, instead of a scope per event. The deadline is on the running loop's
    clock, read from the loop itself (anyio's `current_time` looks the backend up each time)."""

    def __init__(self, events: AsyncIterator[BackendEvent], idle: float) -> None:
        self._events = events
        self._idle = idle
        self._scope: anyio.CancelScope | None = None
        self.exhausted = False

    def watch(self, scope: anyio.CancelScope) -> None:
        self._scope = scope

    async def next(self) -> BackendEvent | None:
        """The next event, None at the end of the turn (the watching scope is cancelled after
        `idle` s of silence)."""
        scope = self._scope
        if scope is not None and self._idle != math.inf:
            scope.deadline = asyncio.get_running_loop().time() + self._idle
        try:
            with backend_call("run_turn"):
                return await anext(self._events)
        except StopAsyncIteration:
            self.exhausted = True
            return None
        finally:
            if scope is not None:
                scope.deadline = math.inf


class TurnRunner:
    def __init__(
        self,
        backend: Backend,
        *,
        progress: bool = True,
        reasoning: bool = False,
        output_mode: OutputMode = "final",
        idle_timeout: float | None = None,
        approval_timeout: float | None = None,
        approval_on_timeout: Literal["deny", "fail"] = "deny",
        close_timeout: float = 10.0,
        turn_hooks: TurnHooks = NO_TURN_HOOKS,
        observer: TurnObserver = NO_OBSERVER,
    ) -> None:
        self._backend = backend
        # Whether the agent's credentials are known bad (readiness reads it).
        self.credentials = CredentialWatch()
        self._turn_hooks = turn_hooks
        self._observer = observer
        self._close_timeout = close_timeout
        self._approval_timeout = approval_timeout or math.inf
        self._approval_on_timeout = approval_on_timeout
        self._progress = progress
        self._reasoning = reasoning
        self._stream = output_mode == "stream"
        self._idle = idle_timeout if idle_timeout else math.inf

    async def run(
        self, run: TaskRun, turn: Turn, on_session: SessionCallback | None = None
    ) -> None:
        """Run `turn` to its end state. Cancellation propagates; the caller finalises.

        `on_session` is awaited with the id of every SessionBound event before anything else
        happens, so the mapping is stored even if the turn crashes later."""
        answer = _Answer()
        with backend_call("run_turn"):
            events = self._backend.run_turn(turn)
        stream = _Events(events, self._idle)
        try:
            with anyio.CancelScope() as idle:
                stream.watch(idle)
                while (event := await stream.next()) is not None:
                    if isinstance(event, DirectReply) and not run.announced:
                        # Only a first turn nobody saw yet may answer without a task.
                        await run.reply_directly([content_to_part(c) for c in event.parts])
                        return
                    if isinstance(event, SessionBound) and on_session is not None:
                        await on_session(event.session_id)
                    run.applying(event)
                    if answer.held is not None and not isinstance(event, _INSTANT):
                        # Anything else happening (a tool call, say) may take long: send the
                        # chunk held back now.
                        await self._flush(run, answer, last_chunk=False)
                    if await self._apply(run, turn, event, answer):
                        return
            if idle.cancelled_caught:
                raise IdleTimeoutError
        finally:
            pending = run.release_approval()
            if pending is not None:
                # The turn stopped while waiting: release the agent's permission callback.
                pending.reply.answer(ApprovalAnswer("deny", "The turn was stopped."))
            # A turn that ends early closes the backend's generator now, not at GC time, so
            # its own cleanup (processes, sessions) runs in order; bounded, so a cleanup that
            # hangs cannot keep the task from ending. An exhausted generator has nothing left.
            close = getattr(events, "aclose", None)
            if close is not None and not stream.exhausted:
                await self._close(close)
        run.applying(None)
        text = answer.text
        message = None
        if self._stream and (answer.chunks or answer.held is not None):
            await self._flush(run, answer, last_chunk=True)
        elif text:
            await run.add_artifact(
                Artifact(artifact_id=answer.artifact_id, name="response", parts=[Part(text=text)]),
                append=False,
                last_chunk=True,
            )
        if text:
            message = agent_message(run.task, [Part(text=text)])
        await self._report(run, turn)
        self.credentials.accepted()
        await run.complete(message)

    async def _report(self, run: TaskRun, turn: Turn) -> None:
        """What the turn hooks add as the agent ends the turn (the workspace's changes)."""
        report = await self._turn_hooks.finish(turn)
        for artifact in report.artifacts:
            await run.add_artifact(
                Artifact(
                    artifact_id=artifact.artifact_id or new_id(),
                    name=artifact.name,
                    parts=[content_to_part(c) for c in artifact.parts],
                ),
                append=False,
                last_chunk=True,
            )
        if report.sections:
            run.record_sections(report.sections)

    async def _close(self, close: Callable[[], Awaitable[object]]) -> None:
        """Close the backend's generator, bounded; a failure is logged, never raised (it would
        replace what ends the turn, a cancellation included)."""
        try:
            with anyio.move_on_after(self._close_timeout, shield=True), backend_call("aclose"):
                await close()
        except Exception:
            log.exception("turn.close_failed", error_id=new_error_id(), backend=self._backend.name)

    async def _chunk(self, run: TaskRun, answer: _Answer, text: str) -> None:
        """Stream mode: send the held chunk, hold this one (the last one carries lastChunk)."""
        if answer.held is not None:
            await self._flush(run, answer, last_chunk=False)
        answer.held = text

    async def _flush(self, run: TaskRun, answer: _Answer, *, last_chunk: bool) -> None:
        text, answer.held = answer.held or "", None
        await run.add_artifact(
            Artifact(artifact_id=answer.artifact_id, name="response", parts=[Part(text=text)]),
            append=answer.chunks > 0,
            last_chunk=last_chunk,
        )
        answer.chunks += 1

    async def _apply(self, run: TaskRun, turn: Turn, event: BackendEvent, answer: _Answer) -> bool:
        """Apply one event; True when it ended the turn."""
        if isinstance(event, Text | TextDelta):
            await self._text(run, answer, event)
            return False
        match event:
            case SessionBound(session_id=session_id):
                run.bind_session(session_id, self.resume_command(session_id, turn.cwd))
            case Usage():
                run.record_usage(event)
                self._observer.usage(run, event)
                await self._turn_hooks.charge(run.principal, run.task.context_id, event)
            case Progress() | Reasoning() | ToolCall() | ToolResult() | FileChange():
                if isinstance(event, ToolCall | ToolResult):
                    self._observer.tool(run, event)
                await self._working(run)
                note = self._note(event, answer)
                if note is not None:
                    await run.progress(note.text, note.data or None)
            case ArtifactOut():
                await self._working(run)
                await run.add_artifact(
                    Artifact(
                        artifact_id=event.artifact_id or new_id(),
                        name=event.name,
                        parts=[content_to_part(c) for c in event.parts],
                    ),
                    append=event.append,
                    last_chunk=event.last_chunk,
                )
            case DirectReply(parts=parts):
                reply = agent_message(run.task, [content_to_part(c) for c in parts])
                await self._report(run, turn)
                await run.complete(reply)
                return True
            case ApprovalRequest():
                await self._await_approval(run, event)
            case NeedsInput(question=question, kind=kind):
                message = agent_message(run.task, [Part(text=question)]) if question else None
                await self._report(run, turn)
                await (run.ask_auth if kind == "auth" else run.ask)(message)
                return True
            case SessionReset(reason=reason):
                run.record_sections({"context_reset": True, "reset_reason": reason})
            case Failed():
                await self._report(run, turn)
                await self._failed(run, event)
                return True
        return False

    async def _failed(self, run: TaskRun, event: Failed) -> None:
        """End the task on `event`: a provider's refusal says its kind in `a2aWrapper.error`;
        refused credentials leave the task AUTH_REQUIRED with the backend's fix."""
        outcome = run.reject if event.kind == "rejected" else run.fail
        text = event.message
        if event.kind in UPSTREAM_KINDS:
            run.record_sections({"error": error_section(event)})
        if event.kind == "auth":
            outcome = run.ask_auth
            text = with_fix(text, credentials_fix(self._backend), event.error_id)
            self.credentials.refused(event.error_id)
        elif event.kind in UPSTREAM_KINDS:
            self.credentials.accepted()  # the provider took them, and refused for another reason
        await outcome(agent_message(run.task, [Part(text=text)]))

    def _note(
        self, event: Progress | Reasoning | ToolCall | ToolResult | FileChange, answer: _Answer
    ) -> Step | None:
        """The progress note an event shows, per `output.progress` / `output.reasoning`."""
        if isinstance(event, Progress):
            return Step(event.text) if event.text else None
        if isinstance(event, Reasoning):
            return Step(event.text) if self._reasoning and event.text else None
        if isinstance(event, ToolCall):
            answer.calls[event.call_id] = event
        if not self._progress:
            return None
        match event:
            case ToolCall():
                return call_step(event)
            case ToolResult():
                return result_step(event, answer.calls.get(event.call_id))
        return file_step(event)

    async def _await_approval(self, run: TaskRun, event: ApprovalRequest) -> None:
        """INPUT_REQUIRED with the question; the turn stays paused until the caller answers
        (the service resumes the task and answers `event.reply`) or approvals.timeout."""
        await run.pause(event, question(event))
        with anyio.move_on_after(self._approval_timeout) as waited:
            answer = await event.reply.wait()
        if waited.cancelled_caught and self._approval_on_timeout == "fail":
            # Still pending: run() releases the agent's permission callback as the turn stops
            # (an SDK callback waiting on it forever would hold the agent's turn open).
            raise ApprovalTimeoutError
        by = "caller"
        if waited.cancelled_caught:
            by = "timeout"
            answer = ApprovalAnswer("deny", "No answer came within approvals.timeout.")
            event.reply.answer(answer)
            await run.resume(
                agent_message(run.task, [Part(text="(no answer: denied by approvals.timeout)")])
            )
        run.record_approval(
            {
                "requestId": event.request_id,
                "tool": event.tool,
                "summary": event.summary,
                "decision": answer.decision,
                "by": by,
            }
        )

    async def _text(self, run: TaskRun, answer: _Answer, event: Text | TextDelta) -> None:
        if not answer.texts and not answer.deltas:
            self._observer.first_output(run)
        if isinstance(event, Text):
            answer.texts.append(event.text)
        else:
            answer.deltas.append(event.text)
        if isinstance(event, TextDelta) or self._stream:
            await self._working(run)
        if self._stream:
            await self._chunk(run, answer, event.text)

    async def _working(self, run: TaskRun) -> None:
        if run.task.status.state != TaskState.WORKING:
            await run.work()

    def resume_command(self, session_id: str | None, cwd: Path | None = None) -> str | None:
        """How to open the session in a terminal (from the backend), if it says; from `cwd`,
        the context's workspace, when it has one (a backend written before workspaces takes
        no `cwd`: it is asked only when there is one)."""
        if not session_id:
            return None
        with backend_call("resume_command"):
            if cwd is None:
                return self._backend.resume_command(session_id)
            return self._backend.resume_command(session_id, cwd)


def with_fix(message: str, fix: str, error_id: str | None) -> str:
    """`message` and then `fix`, the error id's sentence staying last (where callers find it)."""
    if error_id is not None:
        tail = with_error_id(".", error_id)[1:]  # " The daemon log has ... (error id X)."
        if message.endswith(tail):
            return with_error_id(f"{message[: -len(tail)].strip()} {fix}", error_id)
    return f"{message} {fix}"
