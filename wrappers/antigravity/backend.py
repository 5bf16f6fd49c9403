"""`AntigravityBackend`: Google Antigravity (the google-antigravity SDK and its localharness
runtime) behind the daemon (docs/backends.md#antigravity).

One SDK agent, with its own harness process, per live conversation, kept warm in the kit's pool
(keyed by the conversation id, which is our session id: a new conversation gets an id from us,
an old one is resumed by id from `save_dir` after a restart). A turn is `conversation.send()`
and then the conversation's steps until the harness is idle again.
"""

from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from google.antigravity import Agent, types

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Diagnosis,
    Failed,
    Health,
    SessionBound,
    SessionReset,
    Turn,
    in_directory,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.binaries import CliNotFoundError
from core.backend.control import Capabilities
from core.backend.pool import WarmPool
from wrappers.antigravity import control, options
from wrappers.antigravity.approvals import Gate
from wrappers.antigravity.config import AntigravityConfig
from wrappers.antigravity.diagnose import credentials_fix, diagnose
from wrappers.antigravity.events import StepMapper
from wrappers.antigravity.session import ActiveTurn, Session, TurnEnd

log = structlog.get_logger(__name__)

# How long a halted turn may take to end before its harness is killed.
HALT_GRACE = 5.0
EXITED = (
    "The Antigravity runtime exited during the turn; the next turn starts a new one and "
    "continues the conversation."
)
LOST = "The conversation's saved state is gone from antigravity.home; a new conversation serves it."


class AntigravityBackend(BackendBase):
    name = "antigravity"

    def __init__(self, config: AntigravityConfig, *, environ: Mapping[str, str] | None = None):
        self._config = config
        self._environ = dict(os.environ if environ is None else environ)
        self._pool: WarmPool[str, Session] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle
        )
        self._tasks: dict[str, Session] = {}
        self._tg: TaskGroup | None = None

    # ----- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        workdir = self._config.working_directory.expanduser()
        if not workdir.is_dir():
            raise BackendUnavailableError(
                f"antigravity.workingDirectory {str(workdir)!r} does not exist or is not a "
                "directory"
            )
        try:
            options.harness_env(self._config, self._environ)
        except CliNotFoundError as exc:
            raise BackendUnavailableError(str(exc)) from exc
        options.save_block(self._config)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Hosts the turns' step readers; closes warm agents idle for `warmIdle`."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await self._pool.evict_forever(self._close_all)
            finally:
                self._tg = None

    async def aclose(self) -> None:
        await self._close_all(self._pool.drain())

    async def _close_all(self, sessions: list[Session]) -> None:
        for session in sessions:
            await session.close()

    def capabilities(self) -> Capabilities:
        """No steer, no fork; any model, readOnly (wrappers/antigravity/control.py)."""
        return control.capabilities()

    async def health(self) -> Health:
        if self._tg is None:
            return Health(False, "not serving")
        return Health(True, f"{len(self._pool)} warm Antigravity agent(s)")

    async def diagnose(self) -> list[Diagnosis]:
        return await diagnose(self._config, self._environ)

    def credentials_fix(self) -> str:
        return credentials_fix(self._config)

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        """The conversation in a terminal: the SDK's interactive loop on the same state."""
        command = [sys.executable, "-m", "wrappers.antigravity.resume"]
        command += ["--home", str(options.home(self._config)), "--conversation", session_id]
        return in_directory(shlex.join(command), cwd)

    # ----- turns -------------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        resume = turn.session_id
        if self._lost(resume):
            yield SessionReset(LOST)
            resume = None
        model = turn.options.model or self._config.model
        try:
            session = await self._acquire(resume, turn.cwd, model)
        except BackendUnavailableError as exc:
            yield exc.failure(event="antigravity.unavailable")
            return
        except Exception as exc:  # noqa: BLE001 - any start-up failure fails this turn
            yield safe_failure(
                "unavailable",
                "The Antigravity runtime did not start.",
                event="antigravity.start_failed",
                exc=exc,
            )
            return
        active = ActiveTurn(turn)
        session.turn = active
        self._tasks[turn.task_id] = session
        try:
            yield SessionBound(session.conversation_id)
            failure = await self._send(session, active)
            if failure is not None:
                yield failure
                return
            mapper = StepMapper(model=model)
            async for item in active.receive:
                if isinstance(item, ApprovalRequest):
                    yield item  # the engine waits for the caller's answer, then reads on
                elif isinstance(item, TurnEnd):
                    for event in await self._ended(session, mapper, item):
                        yield event
                    return
                else:
                    for event in mapper.feed(item):
                        yield event
        finally:
            # A turn cut short once the harness has it stays registered until `interrupt`
            # has stopped it.
            if active.done.is_set() or not active.sent or not session.alive:
                with anyio.CancelScope(shield=True):
                    await self._end(turn.task_id, session)

    @staticmethod
    async def _ended(session: Session, mapper: StepMapper, end: TurnEnd) -> list[BackendEvent]:
        """The events that end the turn."""
        if not session.alive or (end.error is not None and await session.lost()):
            # The SDK reports a lost harness as a connection error: say what it is.
            return [Failed("error", EXITED)]
        if end.error is not None:
            # The harness closes its connection after a failed turn: the next turn reopens
            # the conversation from its saved state.
            await session.close()
        return list(mapper.finish(end.error, end.usage))

    def _lost(self, conversation_id: str | None) -> bool:
        """Whether the conversation to resume has neither a warm agent nor a saved state."""
        if conversation_id is None or self._pool.get(conversation_id) is not None:
            return False
        return not options.saved(self._config, conversation_id)

    async def _send(self, session: Session, active: ActiveTurn) -> Failed | None:
        if self._tg is None:
            active.done.set()
            return Failed("unavailable", "The Antigravity backend is shutting down.")
        # Shielded: once the harness has the message, the reader must be running, or an
        # interrupt could not know when the turn ended.
        with anyio.CancelScope(shield=True):
            try:
                await session.conversation.send(active.turn.text or " ")
            except Exception as exc:  # noqa: BLE001 - a refused message fails this turn
                active.done.set()
                if not session.alive:
                    return Failed("error", EXITED)
                return safe_failure(
                    "error",
                    "The Antigravity runtime refused the message.",
                    event="antigravity.send_failed",
                    exc=exc,
                )
            active.sent = True
            self._tg.start_soon(self._read_steps, session, active)
        return None

    async def _read_steps(self, session: Session, active: ActiveTurn) -> None:
        """The turn's steps onto its stream, then its end (a task of `serve`)."""
        error: BaseException | None = None
        try:
            async for step in session.conversation.receive_steps():
                active.send(step)
        except types.AntigravityCancelledError:
            # The SDK raises a CancelledError subclass when the harness halted the turn: our
            # halt, not a cancellation of this task.
            error = None
        except Exception as exc:  # noqa: BLE001 - the turn's failure, mapped by StepMapper
            error = exc
        finally:
            usage = None
            try:
                usage = session.conversation.last_turn_usage
            except Exception:
                log.debug("antigravity.usage_unavailable", exc_info=True)
            active.done.set()
            active.send(TurnEnd(None if active.halted else error, usage))

    async def _acquire(
        self, session_id: str | None, cwd: Path | None, model: str | None
    ) -> Session:
        # No lock: the engine runs one turn of a context at a time, and a new conversation
        # gets a fresh id, so no two turns ever open or take the same entry.
        if session_id is not None:
            session = self._pool.take(session_id)
            if session is not None and (stale := session.turn) is not None:
                # A turn cut short without an interrupt: stop it, then take the agent again.
                await self._halt(session)
                await self._end(stale.turn.task_id, session)
                session = self._pool.take(session_id)
            if session is not None and session.alive and session.model == model:
                return session
            if session is not None:
                self._pool.remove(session_id)
                await session.close()
        with anyio.CancelScope(shield=True):
            opened = await self._open(session_id or uuid.uuid4().hex, cwd, model)
            # Beyond maxWarm: close the least recently used idle agents now.
            await self._close_all(self._pool.add(opened.conversation_id, opened))
        return opened

    async def _open(self, conversation_id: str, cwd: Path | None, model: str | None) -> Session:
        """An agent on `model` (a turn's own, or the configured one) for the conversation."""
        holder: list[Session] = []
        gate = Gate(self._config, lambda: holder[0].turn if holder else None)
        block = self._config
        if model != block.model:
            block = block.model_copy(update={"model": model})
        try:
            config = options.agent_config(block, conversation_id, [gate], self._environ, cwd=cwd)
        except CliNotFoundError as exc:
            raise BackendUnavailableError(str(exc)) from exc
        agent = Agent(config)
        await agent.__aenter__()
        session = Session(conversation_id, agent, gate, model)
        holder.append(session)
        log.info("antigravity.agent_started", conversation_id=conversation_id)
        return session

    async def interrupt(self, turn: Turn) -> None:
        session = self._tasks.get(turn.task_id)
        if session is not None:
            with anyio.CancelScope(shield=True):
                await self._halt(session)
                await self._end(turn.task_id, session)

    async def _halt(self, session: Session) -> None:
        """Tell the harness to stop the running turn (it ends its model request and kills its
        command) and wait for the turn to end; kill the agent when it does not in HALT_GRACE."""
        active = session.turn
        if active is None or not active.sent or active.done.is_set():
            return
        active.halted = True
        try:
            await session.conversation.cancel()
        except Exception:
            log.warning("antigravity.halt_failed", exc_info=True)
        with anyio.move_on_after(HALT_GRACE):
            await active.done.wait()
        if not active.done.is_set():
            log.warning("antigravity.halt_timeout", conversation_id=session.conversation_id)
            self._pool.remove(session.conversation_id)
            await session.close()

    async def _end(self, task_id: str, session: Session) -> None:
        if self._tasks.get(task_id) is session:
            del self._tasks[task_id]
        active, session.turn = session.turn, None
        if active is not None:
            active.close()
        if session.alive:
            self._pool.release(session.conversation_id)
        else:
            self._pool.remove(session.conversation_id)
            await session.close()

    async def drop_session(self, session_id: str) -> None:
        """The daemon is done with this conversation: close its agent (the conversation stays
        in `save_dir`)."""
        session = self._pool.get(session_id)
        if session is None or session.turn is not None:
            return
        self._pool.remove(session_id)
        await session.close()
