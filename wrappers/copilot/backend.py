"""`CopilotBackend`: the GitHub Copilot CLI behind the daemon (docs/backends.md#copilot).

One CLI child per daemon, started in `start()`; a warm SDK session per active conversation;
a turn is `session.send()` then the session's events until the root `session.idle`.
"""

from __future__ import annotations

import os
import shlex
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskStatus

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Content,
    Diagnosis,
    Failed,
    Health,
    Progress,
    SessionBound,
    Turn,
    in_directory,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.control import Capabilities, SteerRefusedError
from wrappers.copilot import control
from wrappers.copilot.config import CopilotConfig
from wrappers.copilot.diagnose import credentials_fix, diagnose
from wrappers.copilot.events import TurnState, map_event
from wrappers.copilot.options import session_options
from wrappers.copilot.permissions import PermissionPolicy
from wrappers.copilot.prompt import build_message, build_prompt
from wrappers.copilot.runtime import Child, CopilotRuntime
from wrappers.copilot.sessions import ActiveTurn, ChildExited, WarmSession, WarmSessions

log = structlog.get_logger(__name__)

# How long an aborted turn may take to reach `session.idle` before the CLI is killed.
ABORT_GRACE = 3.0
DISCONNECT_TIMEOUT = 5.0


class CopilotBackend(BackendBase):
    """The `Backend` for GitHub Copilot CLI.

    Background work (crash watchers, the warm-session sweeper) runs in `serve()`, which the
    engine hosts in its task group between `start()` and `aclose()`.
    """

    name = "copilot"

    def __init__(self, config: CopilotConfig, *, environ: Mapping[str, str] | None = None) -> None:
        self._config = config
        self._environ = dict(os.environ if environ is None else environ)
        self._policy = PermissionPolicy(
            config.working_directory,
            allow=config.allow_tools,
            deny=config.deny_tools,
            allow_all=config.dangerously_allow_all_tools,
        )
        self._runtime = CopilotRuntime(config, environ=self._environ, on_exit=self._child_exited)
        self._pool = WarmSessions(warm_idle_ms=config.warm_idle, max_warm=config.max_warm)
        self._models: tuple[str, ...] | None = None

    # ----- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        workdir = self._config.working_directory
        if not workdir.is_dir():
            raise BackendUnavailableError(
                f"copilot.workingDirectory {str(workdir)!r} does not exist or is not a directory"
            )
        try:
            child = await self._runtime.child()
            self._models = await control.listed_models(child.client, self._config)
        except BaseException:
            await self.aclose()
            raise

    def capabilities(self) -> Capabilities:
        """Steer, fork, any model (a BYOK endpoint) or those the CLI lists, the SDK's
        efforts, plan and readOnly (docs/backends.md#copilot)."""
        return control.capabilities(self._config, self._models)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Watch the CLI children for crashes and close warm sessions idle for `warmIdle`."""
        async with anyio.create_task_group() as tg:
            self._runtime.bind(tg)
            task_status.started()
            try:
                await self._pool.evict_forever(self._disconnect_all)
            finally:
                self._runtime.bind(None)

    async def aclose(self) -> None:
        """Stop the CLI (it detaches every session; conversations stay on disk). Idempotent."""
        self._pool.drain()
        await self._runtime.aclose()

    async def health(self) -> Health:
        child = self._runtime.current
        if child is None:
            return Health(False, "the copilot CLI is not running")
        if not child.alive:
            return Health(
                True,
                f"the copilot CLI exited (code {child.returncode}); the next turn starts a new one",
            )
        try:
            with anyio.fail_after(5):
                await child.client.ping()
        except Exception:  # noqa: BLE001 - any failure to answer is the health verdict
            return Health(False, "the copilot CLI does not answer")
        return Health(True, f"copilot CLI {child.version or '?'} running")

    async def diagnose(self) -> list[Diagnosis]:
        return await diagnose(self._config, self._environ)

    def credentials_fix(self) -> str:
        return credentials_fix(self._config)

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        command = f"copilot --resume {shlex.quote(session_id)}"
        if self._config.home is not None:
            home = str(self._config.home.expanduser().resolve())
            command = f"COPILOT_HOME={shlex.quote(home)} {command}"
        return in_directory(command, cwd)

    # ----- turns -------------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        target = await self._target(turn)
        if isinstance(target, Failed):
            yield target
            return
        session_id, resume = target
        yield SessionBound(session_id)
        try:
            warm = await self._acquire(session_id, turn.cwd, resume=resume)
        except BackendUnavailableError as exc:
            yield safe_failure(
                "unavailable",
                "The Copilot CLI is not available.",
                event="copilot.unavailable",
                exc=exc,
            )
            return
        if warm.session_id != session_id:
            yield SessionBound(warm.session_id)
            yield Progress("The earlier Copilot session was not found; this is a new one.")
        active = warm.begin(turn.task_id, turn.approvals, turn.options.mode)
        try:
            failure = await self._apply(warm, turn) or await self._send(warm, active, turn)
            if failure is not None:
                yield failure
                return
            state = TurnState()
            async for item in active.receive:
                if isinstance(item, ChildExited):
                    yield Failed("error", _exited_message(item.returncode))
                    return
                if isinstance(item, ApprovalRequest):
                    yield item  # the engine waits for the caller's answer, then reads on
                    continue
                state, events = map_event(state, item)
                for event in events:
                    yield event
                if state.finished:
                    return
        finally:
            # A turn cut short stays registered until `interrupt` has stopped it.
            if active.done.is_set() or not active.sent:
                self._end(warm)

    async def _target(self, turn: Turn) -> tuple[str, bool] | Failed:
        """The session the turn runs in, and whether it is stored already (to be resumed): a
        fork of `fork_of`, the context's session, or a new one."""
        if turn.fork_of is not None:
            forked = await self._fork(turn.fork_of)
            return forked if isinstance(forked, Failed) else (forked, True)
        return turn.session_id or str(uuid.uuid4()), turn.session_id is not None

    async def _fork(self, source: str) -> str | Failed:
        """A native fork of the stored session `source` (its history up to now; the source
        is untouched): the new session's id."""
        try:
            child = await self._runtime.child()
            with anyio.CancelScope(shield=True):
                forked = await control.fork(child.client, source)
        except Exception as exc:  # noqa: BLE001 - no fork: this turn fails, never a fresh session
            return safe_failure(
                "error",
                "The Copilot CLI could not fork the source conversation's session.",
                event="copilot.fork_failed",
                exc=exc,
                source=source,
            )
        return forked

    async def _apply(self, warm: WarmSession, turn: Turn) -> Failed | None:
        """The turn's own model, effort and mode on its session, or the configured ones back
        after a turn that chose others."""
        session = warm.session
        switched = warm.applied != control.Applied()
        if session is None or not (switched or turn.options.chosen):
            return None
        with anyio.CancelScope(shield=True):
            try:
                if warm.base is None:
                    warm.base = await control.base_of(session, self._config)
                if not warm.applied.known:
                    warm.applied = await control.applied_of(session, warm.base)
                warm.applied = await control.apply(session, warm.base, warm.applied, turn.options)
            except Exception as exc:  # noqa: BLE001 - the CLI refused the options: fail the turn
                if not warm.child.alive:
                    return Failed("error", _exited_message(warm.child.returncode))
                return safe_failure(
                    "error",
                    "The Copilot CLI refused this message's model, effort or mode.",
                    event="copilot.options_refused",
                    exc=exc,
                    options=repr(turn.options),
                )
        return None

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        """The CLI's immediate delivery: the message joins the running turn, the model's next
        request carries it, and the turn still ends once (one `session.idle`)."""
        warm = self._pool.for_task(turn.task_id)
        active = None if warm is None else warm.turn
        if warm is None or warm.session is None or active is None:
            raise SteerRefusedError(f"no running Copilot turn for task {turn.task_id}")
        if not active.sent or active.done.is_set():
            raise SteerRefusedError("the Copilot turn is starting or has ended")
        prompt, attachments = build_prompt(parts)
        # Counted before it is sent: its `user.message` may come before `send` returns.
        active.steering += 1
        try:
            await warm.session.send(prompt, attachments=attachments or None, mode="immediate")
        except Exception as exc:
            active.steering -= 1
            raise SteerRefusedError(f"the Copilot CLI refused the message: {exc!r}") from exc

    async def _send(self, warm: WarmSession, active: ActiveTurn, turn: Turn) -> Failed | None:
        prompt, attachments = build_message(turn)
        session = warm.session
        if session is None:
            raise RuntimeError("session not opened")
        # Shielded: once the CLI has the message, `active.sent` must say so, or an interrupt
        # could not know there is a turn to abort.
        with anyio.CancelScope(shield=True):
            try:
                active.prompt_id = await session.send(prompt, attachments=attachments or None)
            except Exception as exc:  # noqa: BLE001 - any refusal fails this turn, with its reason
                if not warm.child.alive:
                    return Failed("error", _exited_message(warm.child.returncode))
                return safe_failure(
                    "error",
                    "The Copilot CLI refused the message.",
                    event="copilot.send_failed",
                    exc=exc,
                )
            active.sent = True
        return None

    async def _acquire(self, session_id: str, cwd: Path | None, *, resume: bool) -> WarmSession:
        # A warm session keeps the directory it was opened in (a context keeps its workspace).
        warm = self._pool.live(session_id)
        if warm is not None:
            if warm.turn is not None:  # a turn cut short without an interrupt
                await self._stop(warm)
            self._pool.take(session_id)
            return warm
        child = await self._runtime.child()
        with anyio.CancelScope(shield=True):
            opened = await self._open(child, session_id, cwd, resume=resume)
            # Beyond maxWarm: close the least recently used idle sessions now, not later.
            await self._disconnect_all(self._pool.add(opened.session_id, opened))
        return opened

    async def _open(
        self, child: Child, session_id: str, cwd: Path | None, *, resume: bool
    ) -> WarmSession:
        policy = self._policy if cwd is None else self._policy.at(cwd)
        warm = WarmSession(session_id, child, policy, cwd)
        options = session_options(self._config, warm.permission, cwd)
        client = child.client
        try:
            if resume:
                try:
                    warm.session = await client.resume_session(
                        session_id, on_event=warm.dispatch, **options
                    )
                    # It may run with what an earlier turn chose (control.applied_of).
                    warm.applied = control.UNKNOWN
                except Exception as exc:
                    if "not found" not in str(exc).lower() or not child.alive:
                        raise
                    log.warning("copilot.session_not_found", session_id=session_id)
                    warm.session_id = str(uuid.uuid4())
            if warm.session is None:
                warm.session = await client.create_session(
                    session_id=warm.session_id, on_event=warm.dispatch, **options
                )
        except Exception as exc:
            if not child.alive:
                raise BackendUnavailableError(_exited_message(child.returncode)) from exc
            raise
        return warm

    async def interrupt(self, turn: Turn) -> None:
        warm = self._pool.for_task(turn.task_id)
        if warm is not None:
            await self._stop(warm)

    async def _stop(self, warm: WarmSession) -> None:
        """Abort the session's running turn and wait until the CLI says it is idle; kill the
        CLI when it does not within `ABORT_GRACE`."""
        active = warm.turn
        if active is None:
            return
        if active.sent and not active.done.is_set() and warm.session is not None:
            with anyio.CancelScope(shield=True):
                try:
                    await warm.session.abort()
                except Exception:
                    log.warning("copilot.abort_failed", session_id=warm.session_id, exc_info=True)
                with anyio.move_on_after(ABORT_GRACE):
                    await active.done.wait()
                if not active.done.is_set():
                    log.warning("copilot.abort_timeout", session_id=warm.session_id)
                    await self._runtime.kill(warm.child)
                    self._forget(warm.child)
        self._end(warm)

    def _end(self, warm: WarmSession) -> None:
        """The session's turn is over: it may be evicted from now on."""
        warm.end()
        if self._pool.get(warm.session_id) is warm:
            self._pool.release(warm.session_id)

    async def drop_session(self, session_id: str) -> None:
        """The daemon is done with this conversation: close its warm session (the CLI keeps it
        on disk, so `copilot --resume` still finds it)."""
        warm = self._pool.live(session_id)
        if warm is None or warm.turn is not None:
            return
        self._pool.remove(session_id)
        await self._disconnect(warm)

    # ----- background --------------------------------------------------------------------------

    async def _disconnect_all(self, sessions: list[WarmSession]) -> None:
        for warm in sessions:
            await self._disconnect(warm)

    async def _disconnect(self, warm: WarmSession) -> None:
        if warm.session is None or not warm.child.alive:
            return
        with anyio.move_on_after(DISCONNECT_TIMEOUT, shield=True):
            try:
                await warm.session.disconnect()
                log.debug("copilot.session_evicted", session_id=warm.session_id)
            except Exception:
                log.warning("copilot.disconnect_failed", session_id=warm.session_id, exc_info=True)

    def _child_exited(self, child: Child) -> None:
        self._forget(child)

    def _forget(self, child: Child) -> None:
        for warm in self._pool.forget_child(child):
            warm.child_exited()


def _exited_message(returncode: int | None) -> str:
    code = "" if returncode is None else f" (exit code {returncode})"
    return (
        f"The Copilot CLI process exited during the turn{code}; the next turn starts a new one "
        "and continues the conversation."
    )
