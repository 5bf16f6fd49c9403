"""`FifthBackend`: a turn is a loop of streamed chat completions requests, the shell tool run
between them (asking the caller first under `approvals.mode: ask`), until the model answers
without a tool call; sessions are JSON files (sessions.py)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from pathlib import Path

import aiohttp
import anyio
from anyio.abc import TaskStatus

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Diagnosis,
    Failed,
    Health,
    SessionBound,
    TextDelta,
    ToolCall,
    ToolResult,
    Turn,
    Usage,
    in_directory,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.pool import WarmPool
from tests.support.fifth_backend import chat, shell
from tests.support.fifth_backend.config import FifthConfig
from tests.support.fifth_backend.sessions import Session, SessionFiles

# Model requests one turn may make: a model that calls tools forever is stopped there.
MAX_STEPS = 25


class FifthBackend(BackendBase):
    name = "fifth"

    def __init__(self, config: FifthConfig) -> None:
        self.config = config
        home = config.home or config.working_directory / ".fifth"
        self._files = SessionFiles(home.expanduser() / "sessions")
        self._http: aiohttp.ClientSession | None = None
        self._warm: WarmPool[str, Session] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle
        )
        self._shells: dict[str, shell.Shell] = {}
        self._serving = False

    async def start(self) -> None:
        if not self.config.working_directory.expanduser().is_dir():
            raise BackendUnavailableError(
                f"fifth.workingDirectory {self.config.working_directory} does not exist"
            )
        self._files.folder.mkdir(parents=True, exist_ok=True)
        self._http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.config.request_timeout / 1000)
        )

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Forget warm sessions idle for `warmIdle` (they stay on disk)."""
        self._serving = True
        task_status.started()
        try:
            await self._warm.evict_forever(self._forget)
        finally:
            self._serving = False

    async def _forget(self, expired: list[Session]) -> None:
        return None  # nothing to close: every turn saved its session already

    async def aclose(self) -> None:
        self._warm.drain()
        for running in list(self._shells.values()):
            await running.stop_all()
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def health(self) -> Health:
        ok = self._http is not None and self._serving
        return Health(ok, f"{len(self._warm)} warm session(s)" if ok else "not started")

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("model endpoint", True, self.config.base_url)]

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        transcript = f"{sys.executable} -m tests.support.fifth_backend.transcript"
        return in_directory(f"{transcript} {self._files.folder} --session {session_id}", cwd)

    # ----- turns -----------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        session = self._session(turn.session_id)
        yield SessionBound(session.id)
        messages = [*session.messages, {"role": "user", "content": turn.text}]
        runner = shell.Shell(
            turn.cwd or self.config.working_directory.expanduser(),
            {**os.environ, **self.config.env},
        )
        self._shells[turn.task_id] = runner
        used = Usage(0, 0, model=self.config.model)
        try:
            for _ in range(MAX_STEPS):
                reply = chat.Reply()
                async with aclosing(self._ask_model(messages, reply)) as events:
                    async for event in events:
                        yield event
                        if isinstance(event, Failed):
                            return
                messages.append(reply.message())
                used = Usage(
                    used.input_tokens + reply.input_tokens,
                    used.output_tokens + reply.output_tokens,
                    model=self.config.model,
                )
                if not reply.calls:
                    break
                for use in reply.calls.values():
                    async for event in self._use_tool(turn, session, use, runner, messages):
                        yield event
            else:
                yield Failed("error", f"The agent stopped after {MAX_STEPS} model requests.")
                return
        finally:
            self._shells.pop(turn.task_id, None)
            self._warm.release(session.id)
        session.messages = messages
        self._files.save(session)
        yield used

    async def _ask_model(
        self, messages: list[chat.Message], reply: chat.Reply
    ) -> AsyncGenerator[BackendEvent, None]:
        """One model request: its text deltas, or one Failed written for the caller."""
        if self._http is None:
            yield BackendUnavailableError("not started").failure(event="fifth.unavailable")
            return
        body = {
            "model": self.config.model or "default",
            "messages": messages,
            "tools": [shell.TOOL],
        }
        try:
            async with aclosing(
                chat.stream(
                    self._http, self.config.base_url, body, reply, api_key=self.config.api_key
                )
            ) as deltas:
                async for delta in deltas:
                    yield TextDelta(delta)
        except BackendUnavailableError as exc:
            yield exc.failure(event="fifth.unavailable")
        except chat.ModelError as exc:
            yield safe_failure(
                "error",
                "The model refused the turn.",
                event="fifth.model_error",
                detail=exc.body,
                status=exc.status,
            )

    async def _use_tool(
        self,
        turn: Turn,
        session: Session,
        use: chat.ToolUse,
        runner: shell.Shell,
        messages: list[chat.Message],
    ) -> AsyncIterator[BackendEvent]:
        """Run one tool call (after the caller's approval when it is asked) and append its
        result for the model."""
        arguments = use.input()
        yield ToolCall(use.call_id, use.name, arguments)
        command = arguments.get("command")
        if use.name != shell.NAME or not isinstance(command, str):
            output, failed = f"There is no tool {use.name!r} taking these arguments.", True
        elif turn.approvals == "ask" and command not in session.approved:
            question = ApprovalRequest(
                request_id=use.call_id or uuid.uuid4().hex,
                kind="command",
                tool=shell.NAME,
                summary=f"Run `{command}` in the working directory",
                detail={"command": command, "cwd": str(runner.cwd)},
            )
            yield question
            answer = await question.reply.wait()
            if answer.decision == "deny":
                said = f" They said: {answer.message}" if answer.message else ""
                output, failed = f"The user denied running this command.{said}", True
            else:
                if answer.decision == "approve_always":
                    session.approved.add(command)
                output, failed = await runner.run(command), False
        else:
            output, failed = await runner.run(command), False
        yield ToolResult(use.call_id, output, is_error=failed)
        messages.append({"role": "tool", "tool_call_id": use.call_id, "content": output})

    async def interrupt(self, turn: Turn) -> None:
        """Stop the turn's commands if its consumer's cancellation has not already (closing
        that consumer also closed its model request)."""
        running = self._shells.get(turn.task_id)
        if running is not None:
            await running.stop_all()

    async def drop_session(self, session_id: str) -> None:
        self._warm.remove(session_id)
        self._files.delete(session_id)

    # ----- sessions --------------------------------------------------------------------------

    def _session(self, session_id: str | None) -> Session:
        """The session to resume (warm, else from its file), or a new one; busy from now."""
        if session_id is not None and (warm := self._warm.take(session_id)) is not None:
            return warm
        if session_id is not None and not self._files.exists(session_id):
            # Its file is gone: a new session, under a new id, so the task reports the reset.
            session_id = None
        session = self._files.load(session_id or uuid.uuid4().hex)
        if not session.messages and self.config.system_prompt:
            session.messages = [{"role": "system", "content": self.config.system_prompt}]
        self._warm.add(session.id, session)
        return session
