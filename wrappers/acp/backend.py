"""`AcpBackend`: any Agent Client Protocol agent behind the daemon (docs/backends.md#acp).

One agent process per daemon (ACP multiplexes sessions over one connection), started before
the daemon is ready and again by the next turn after it exits; one ACP session per
conversation, kept warm in a `WarmPool`. A turn is `session/prompt` (run in the backend's
task group, so the turn's consumer reads the updates while the request is pending) and the
`session/update`s of its session until the prompt's response. `interrupt` is
`session/cancel`, then a wait for the agent to answer the prompt with `cancelled`; an agent
that does not within `CANCEL_GRACE` is stopped (the next turn starts a new one).
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog
from acp import RequestError
from acp.schema import TextContentBlock
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream

from core.backend import (
    GENERIC_FIX,
    NO_OPTIONS,
    ApprovalRequest,
    BackendEvent,
    Diagnosis,
    Failed,
    Health,
    Progress,
    SessionBound,
    Turn,
    TurnOptions,
    Usage,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.control import Capabilities
from core.backend.pool import WarmPool
from wrappers.acp.agent import AgentProcess, start_agent
from wrappers.acp.client import ActiveTurn, DaemonClient
from wrappers.acp.config import AcpConfig
from wrappers.acp.control import Choices, Control, Offer, learn
from wrappers.acp.diagnose import auth_methods
from wrappers.acp.events import TurnUpdates
from wrappers.acp.presets import Preset
from wrappers.acp.prompt import PromptDone, prompt_blocks, prompt_outcome
from wrappers.acp.sessions import mcp_servers, open_session
from wrappers.acp.terminals import Terminals

log = structlog.get_logger(__name__)

CANCEL_GRACE = 5.0
REQUEST_TIMEOUT = 60.0


@dataclass(eq=False)
class WarmSession:
    session_id: str
    agent: AgentProcess
    choices: Choices
    always: set[tuple[str, str]] = field(default_factory=set)


@dataclass(eq=False)
class _Running:
    agent: AgentProcess
    active: ActiveTurn
    receive: MemoryObjectReceiveStream[Any]
    done: anyio.Event = field(default_factory=anyio.Event)
    prompted: bool = False
    # Set as the prompt is written: a cancel sent before would reach the agent first.
    sending: anyio.Event = field(default_factory=anyio.Event)


class AcpBackend(BackendBase):
    def __init__(
        self, config: AcpConfig, *, name: str = "acp", preset: Preset | None = None
    ) -> None:
        self.name = name
        self._config = config
        self._preset = preset
        self._root = config.working_directory.expanduser().resolve()
        self._pool: WarmPool[str, WarmSession] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle
        )
        self._agent: AgentProcess | None = None
        self._starting = anyio.Lock()
        self._tasks: TaskGroup | None = None
        self._terminals: Terminals | None = None
        self._running: dict[str, _Running] = {}
        # A new session opened ahead of need: the first turn of the next conversation does not
        # wait for `session/new` (OpenCode's first one takes over a second).
        self._spare: WarmSession | None = None
        # What the agent lets a turn choose: learned from its first session (at start).
        self._control: Control | None = None

    # ----- lifecycle ---------------------------------------------------------------------------

    def argv(self) -> list[str]:
        """The agent's command line: `command` (its first word replaced by `cliPath` when
        set), or the preset's binary and arguments. Raises BackendUnavailableError."""
        config, search = self._config, self._env().get("PATH")
        if self._preset is not None:
            binary = self._preset.binary(config.cli_path, search)
            return [str(binary), *(config.command or self._preset.args)]
        command = list(config.command or [])
        if config.cli_path is not None:
            command = [str(config.cli_path.expanduser()), *command[1:]]
        if not command:
            raise BackendUnavailableError("acp.command is empty")
        return command

    def _env(self) -> dict[str, str]:
        preset = self._preset
        env = {**os.environ, **(preset.env if preset else {}), **self._config.env}
        home = self._config.home
        if home is not None and preset is not None and preset.home_variable:
            env[preset.home_variable] = str(home.expanduser().resolve())
        if self._config.model and preset is not None and preset.model_variable:
            env[preset.model_variable] = self._config.model
        return env

    async def start(self) -> None:
        if not self._root.is_dir():
            raise BackendUnavailableError(
                f"{self.name}.workingDirectory {str(self._root)!r} does not exist or is not a "
                "directory"
            )
        self.argv()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        failure: list[BackendUnavailableError] = []
        async with anyio.create_task_group() as tg:
            self._tasks = terminals_tasks = tg
            self._terminals = terminals = Terminals(terminals_tasks)
            try:
                tg.start_soon(self._pool.evict_forever, self._close_sessions)
                # Ready once the agent answered `initialize`: a command that cannot start
                # fails the daemon's start, and the first turn does not wait for the agent.
                agent = await self._ensure_agent()
                await self._prepare_spare(agent)
                task_status.started()
                await anyio.sleep_forever()
            except BackendUnavailableError as exc:
                failure.append(exc)  # raised below, outside the task group
            finally:
                self._tasks = None
                with anyio.CancelScope(shield=True):
                    await self._stop_agent()
                    await terminals.aclose()
                tg.cancel_scope.cancel()
        if failure:
            raise failure[0]

    async def aclose(self) -> None:
        await self._stop_agent()

    async def _stop_agent(self) -> None:
        agent, self._agent, self._spare = self._agent, None, None
        self._pool.drain()
        if agent is not None:
            await agent.aclose()

    async def health(self) -> Health:
        agent = self._agent
        if agent is None:
            return Health(False, "the agent is not running yet")
        if not agent.alive:
            return Health(True, "the agent exited; the next turn starts a new one")
        return Health(True, f"{agent.version} running")

    async def diagnose(self) -> list[Diagnosis]:
        try:
            argv = self.argv()
        except BackendUnavailableError as exc:
            return [Diagnosis("agent command", False, str(exc))]
        checks = [Diagnosis("agent command", True, " ".join(argv))]
        preset = self._preset
        if preset is not None and preset.credential_check is not None:
            checks.append(preset.credential_check(self._env()))
        file_system = preset is None or preset.file_system
        checks.append(
            await auth_methods(argv, cwd=self._root, env=self._env(), file_system=file_system)
        )
        return checks

    def credentials_fix(self) -> str:
        if self._preset is None:
            return GENERIC_FIX
        return f"On the daemon's host, {self._preset.credentials}; then send the message again."

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        command = None if self._preset is None else self._preset.resume_command(session_id)
        return None if command is None else f"cd {shlex.quote(str(cwd or self._root))} && {command}"

    # ----- the agent process -------------------------------------------------------------------

    async def _ensure_agent(self) -> AgentProcess:
        async with self._starting:
            agent = self._agent
            if agent is not None and agent.alive:
                return agent
            if self._tasks is None or self._terminals is None:
                raise BackendUnavailableError("the backend is not serving")
            for warm in self._pool.drain():
                log.info("acp.session_lost", session_id=warm.session_id)
            client = DaemonClient(self._root, self._config.approve_kinds, self._terminals)
            try:
                self._agent = await start_agent(
                    self.argv(),
                    cwd=self._root,
                    env=self._env(),
                    client=client,
                    tasks=self._tasks,
                    file_system=self._preset is None or self._preset.file_system,
                )
            except OSError as exc:
                raise BackendUnavailableError(f"the agent did not start: {exc}") from exc
            except (RequestError, TimeoutError, ConnectionError) as exc:
                raise BackendUnavailableError(f"the agent did not initialize: {exc!r}") from exc
            return self._agent

    async def _open(self, agent: AgentProcess, turn: Turn) -> tuple[WarmSession, str | None]:
        """The warm session of the turn: the pool's, a loaded one, a fork of `turn.fork_of`,
        or a new one (with the reason the earlier one could not be continued)."""
        wanted = turn.session_id
        if wanted is not None:
            warm = self._pool.take(wanted)
            if warm is not None and warm.agent is agent:
                return warm, None
            if warm is not None:
                self._pool.remove(wanted)
        mcp, cwd = mcp_servers(self._config.mcp_servers, agent), str(turn.cwd or self._root)
        reason = None
        with anyio.fail_after(REQUEST_TIMEOUT):
            if turn.fork_of is not None:
                # Only offered where the agent advertised session/fork (capabilities()).
                forked = await open_session(
                    agent, "session/fork", cwd=cwd, mcp=mcp, session_id=turn.fork_of
                )
                return self._pooled(agent, *forked), None
            if wanted is not None and agent.can_load:
                try:
                    loaded = await open_session(
                        agent, "session/load", cwd=cwd, mcp=mcp, session_id=wanted
                    )
                except RequestError as exc:
                    log.warning("acp.load_failed", session_id=wanted, error=str(exc))
                    reason = (
                        "The agent could not load the earlier session; this turn starts a new one."
                    )
                else:
                    return self._pooled(agent, *loaded), None
            elif wanted is not None:
                reason = (
                    f"{agent.version} cannot load an earlier session (it does not offer "
                    "session/load); this turn starts a new one."
                )
            # The spare session works in the working directory: not for a workspace's turn.
            spare, self._spare = (self._spare, None) if turn.cwd is None else (None, self._spare)
            if spare is not None and spare.agent is agent:
                self._refill_spare(agent)
                return self._pool_warm(spare), reason
            created = await self._new_session(agent, cwd)
        return self._pooled(agent, *created), reason

    async def _new_session(self, agent: AgentProcess, cwd: str) -> tuple[str, Offer]:
        """`session/new`; the first one tells what the agent lets a turn choose."""
        mcp = mcp_servers(self._config.mcp_servers, agent)
        session_id, offer = await open_session(agent, "session/new", cwd=cwd, mcp=mcp)
        if self._control is None:
            self._control = learn(offer, agent, self._config, self._preset)
            log.info("acp.capabilities", agent=agent.version, **self.capabilities().record())
        return session_id, offer

    async def _prepare_spare(self, agent: AgentProcess) -> None:
        try:
            with anyio.fail_after(REQUEST_TIMEOUT):
                session_id, offer = await self._new_session(agent, str(self._root))
                warm = WarmSession(session_id, agent, self._choices(offer))
                await self._choose(warm, NO_OPTIONS)
        except (RequestError, TimeoutError, ConnectionError) as exc:
            log.warning("acp.spare_session_failed", error=str(exc))
            return
        if self._agent is agent and self._spare is None:
            self._spare = warm

    def _refill_spare(self, agent: AgentProcess) -> None:
        if self._tasks is not None:
            self._tasks.start_soon(self._prepare_spare, agent)

    def _choices(self, offer: Offer) -> Choices:
        control = self._control
        return Choices.of(offer, control.offer if control else offer)

    async def _choose(self, warm: WarmSession, options: TurnOptions) -> None:
        """Bring the session to what a turn with `options` runs with: the options, and the
        configured values where it chose none (an earlier turn's options end here)."""
        control = self._control
        if control is None:
            return
        wanted = control.wanted(options)
        with anyio.fail_after(REQUEST_TIMEOUT):
            await warm.choices.bring_to(
                warm.session_id, wanted, warm.agent.request, control.chosen(options)
            )

    def capabilities(self) -> Capabilities:
        """Before the agent's first session (the daemon's start opens one): what any ACP
        agent behind this backend can do (approvals); after it, what the agent reported."""
        control = self._control
        return control.capabilities() if control else Capabilities(approvals=True)

    def _pooled(self, agent: AgentProcess, session_id: str, offer: Offer) -> WarmSession:
        return self._pool_warm(WarmSession(session_id, agent, self._choices(offer)))

    def _pool_warm(self, warm: WarmSession) -> WarmSession:
        evicted = self._pool.add(warm.session_id, warm)
        if evicted and self._tasks is not None:
            self._tasks.start_soon(self._close_sessions, evicted)
        return warm

    async def _close_sessions(self, sessions: list[WarmSession]) -> None:
        for warm in sessions:
            if warm.agent.alive and warm.agent.can_close:
                with anyio.move_on_after(5, shield=True):
                    try:
                        await warm.agent.connection.close_session(session_id=warm.session_id)
                    except (RequestError, ConnectionError):
                        log.debug("acp.close_session_failed", session_id=warm.session_id)

    # ----- turns -------------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        try:
            agent = await self._ensure_agent()
            warm, reason = await self._open(agent, turn)
            if turn.cwd is not None:
                agent.client.roots[warm.session_id] = turn.cwd.resolve()
        except BackendUnavailableError as exc:
            yield exc.failure(event="acp.unavailable")
            return
        except (RequestError, TimeoutError, ConnectionError) as exc:
            yield safe_failure(
                "unavailable",
                "The agent did not open a session.",
                event="acp.session_failed",
                exc=exc,
            )
            return
        try:
            await self._choose(warm, turn.options)
        except (RequestError, TimeoutError, ConnectionError) as exc:
            self._pool.release(warm.session_id)
            yield safe_failure(
                "error",
                "The agent did not take this turn's model, effort or mode.",
                event="acp.options_failed",
                exc=exc,
            )
            return
        send, receive = anyio.create_memory_object_stream[Any](math.inf)
        active = ActiveTurn(
            warm.session_id, turn.task_id, turn.approvals == "ask", send, warm.always
        )
        running = _Running(agent, active, receive)
        agent.client.active[warm.session_id] = active
        self._running[turn.task_id] = running
        finished = False
        try:
            yield SessionBound(warm.session_id)
            if reason is not None:
                yield Progress(reason)
            self._prompt(running, prompt_blocks(turn, images=agent.takes_images))
            async for event in self._events(running, receive):
                yield event
            finished = True
        finally:
            if finished or running.done.is_set() or not running.prompted:
                self._end(running)
            # else: cut short mid-prompt; `interrupt` stops the agent's work, then ends it.

    async def _events(
        self, running: _Running, receive: MemoryObjectReceiveStream[Any]
    ) -> AsyncIterator[BackendEvent]:
        updates = TurnUpdates(notices=None if self._preset is None else self._preset.notices)
        active = running.active
        async for item in receive:
            if isinstance(item, ApprovalRequest):
                yield item
            elif isinstance(item, PromptDone):
                outcome = prompt_outcome(item, agent_alive=running.agent.alive)
                if not isinstance(outcome, Failed) and updates.error is not None:
                    outcome = safe_failure(
                        "error",
                        "The agent's model request failed.",
                        event="acp.agent_error",
                        detail=updates.error,
                    )
                if isinstance(outcome, Failed | Usage):
                    yield outcome
                if isinstance(outcome, Failed) or not active.denials:
                    return
                # The caller denied with words for the agent: ACP's answer has no room for
                # them, so they follow as the next prompt of the same turn.
                words = "\n\n".join(active.denials)
                active.denials.clear()
                running.done = anyio.Event()
                self._prompt(running, [TextContentBlock(type="text", text=words)])
            else:
                for event in updates.map(item):
                    yield event

    def _prompt(self, running: _Running, blocks: list[Any]) -> None:
        if self._tasks is None:
            raise BackendUnavailableError("the backend is not serving")
        self._tasks.start_soon(self._send_prompt, running, blocks)
        running.prompted = True

    async def _send_prompt(self, running: _Running, blocks: list[Any]) -> None:
        active = running.active
        running.sending.set()
        try:
            response = await running.agent.connection.prompt(
                session_id=active.session_id, prompt=blocks
            )
            done = PromptDone(response, None)
        except Exception as exc:  # noqa: BLE001 - handed to the turn, which words the failure
            done = PromptDone(None, exc)
        running.done.set()
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            active.send.send_nowait(done)

    def _end(self, running: _Running) -> None:
        active = running.active
        if running.agent.client.active.get(active.session_id) is active:
            del running.agent.client.active[active.session_id]
        self._running.pop(active.task_id, None)
        active.send.close()
        running.receive.close()
        self._pool.release(active.session_id)

    async def interrupt(self, turn: Turn) -> None:
        running = self._running.get(turn.task_id)
        if running is None:
            return
        with anyio.CancelScope(shield=True):
            active = running.active
            active.cancelled.set()
            with anyio.move_on_after(CANCEL_GRACE):
                await running.sending.wait()
            if running.agent.alive and not running.done.is_set():
                try:
                    await running.agent.connection.cancel(session_id=active.session_id)
                except (RequestError, ConnectionError):
                    log.debug("acp.cancel_failed", session_id=active.session_id)
            if self._terminals is not None:
                await self._terminals.kill_session(active.session_id)
            with anyio.move_on_after(CANCEL_GRACE):
                await running.done.wait()
            if not running.done.is_set():
                log.warning("acp.cancel_timeout", session_id=active.session_id)
                if running.agent is self._agent:
                    await self._stop_agent()
                else:
                    await running.agent.aclose()
            self._end(running)

    async def drop_session(self, session_id: str) -> None:
        if self._pool.busy(session_id):
            return
        warm = self._pool.remove(session_id)
        if warm is not None:
            await self._close_sessions([warm])
