"""`ClaudeBackend`: Claude Code behind the daemon, one warm `ClaudeSDKClient` per active context.

Lifecycle of a context's client: the first turn connects one (a Claude Code process, resumed with
`--resume=<id>` when the core has a session for the context); follow-up turns reuse it while the
core asks for the same session; it is retired when idle for `warmIdle`, pushed out beyond
`maxWarm`, dropped by the core (session TTL), replaced by another session, or when its process
dies. A retired client's process is stopped for sure (process.stop); the session itself stays on
disk, so the next turn resumes it.

Background work (the idle reaper, each turn's message pump, stopping retired clients) runs in
`serve()`, which the engine hosts in its task group between `start()` and `aclose()`.
"""

from __future__ import annotations

import math
import os
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream
from claude_agent_sdk import (
    ClaudeSDKClient,
    ClaudeSDKError,
    CLINotFoundError,
    ResultError,
)

from core.backend import (
    ApprovalRequest,
    BackendEvent,
    Content,
    Diagnosis,
    Failed,
    Health,
    Progress,
    Turn,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.binaries import CliNotFoundError
from core.backend.control import Capabilities, SteerRefusedError
from core.backend.pool import WarmPool
from wrappers.claude import control, diagnose, options, process, stream
from wrappers.claude.approvals import Approver
from wrappers.claude.config import ClaudeConfig
from wrappers.claude.events import CREDENTIALS_HINT, TurnState, carry, map_message
from wrappers.claude.pool import Key, Pump, WarmClient, unusable
from wrappers.claude.prompt import user_message

log = structlog.get_logger(__name__)

CRASHED = (
    "The Claude Code process ended in the middle of the turn; the next message starts a new "
    "one and continues the session."
)
COSTS_KEPT = 10_000
FORK_SOURCE_MISSING = (
    "The conversation to fork has no Claude Code session in the agent's state directory any "
    "more, so it cannot be forked; start a new conversation instead."
)


class _SessionNotFoundError(Exception):
    pass


class _ForkSourceMissingError(Exception):
    """The session a fork starts from is not in Claude Code's state directory."""


class ClaudeBackend(BackendBase):
    name = "claude"
    # Whose models it runs (gen_ai.provider.name of the daemon's traces).
    model_provider = "anthropic"

    def __init__(
        self,
        config: ClaudeConfig,
        *,
        interrupt_grace: float = 3.0,
        stop_grace: float = 2.0,
    ) -> None:
        """`interrupt_grace`: how long an interrupted turn may take to stop before its process
        is killed; `stop_grace`: how long a retired process may take to exit before SIGTERM,
        then before SIGKILL."""
        self._config = config
        self._interrupt_grace = interrupt_grace
        self._stop_grace = stop_grace
        self._pool: WarmPool[Key, WarmClient] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle
        )
        self._stopping_sessions: dict[str, anyio.Event] = {}
        """Sessions whose retired process is still exiting: a resume waits for it, so two
        processes never write one session's transcript."""
        self._costs: OrderedDict[str, float] = OrderedDict()
        """Each session's cumulative cost at its last result, for the next turn's baseline."""
        self._cli: Path | None = None
        self._tg: TaskGroup | None = None
        """serve()'s task group while it runs."""

    # ----- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Check the configuration (refusing what cannot work headless)."""
        problems = self._problems()
        if problems:
            raise BackendUnavailableError("; ".join(problems))
        self._cli = options.resolve_cli(self._config)
        if self._config.home is not None:
            self._config.home.expanduser().mkdir(parents=True, exist_ok=True)

    def _problems(self) -> list[str]:
        config = self._config
        problems = []
        workdir = options.working_directory(config)
        if not workdir.is_dir():
            problems.append(f"claude.workingDirectory {workdir} does not exist")
        for extra in config.add_dirs:
            if not extra.expanduser().is_dir():
                problems.append(f"claude.addDirs: {extra} does not exist")
        try:
            options.resolve_cli(config)
        except CliNotFoundError as exc:
            problems.append(str(exc))
        env = {**os.environ, **config.env}
        if (
            config.permission_mode == "bypassPermissions"
            and os.geteuid() == 0
            and not env.get("IS_SANDBOX")
        ):
            problems.append(
                "Claude Code refuses bypassPermissions as root unless it runs in a sandbox; "
                'set "IS_SANDBOX": "1" in claude.env if this machine is one, or run as '
                "another user"
            )
        return problems

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Retire clients idle for `warmIdle`; host the turns' pumps and the stopping of
        retired clients. Cancelled at shutdown: it then waits for the clients still stopping
        (their stop is shielded), so `aclose()` finds none half-stopped."""
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                task_status.started()
                await self._pool.evict_forever(self._retire_idle)
        finally:
            self._tg = None

    async def _retire_idle(self, expired: list[WarmClient]) -> None:
        for warm in expired:
            await self._retire(warm, "idle")

    async def aclose(self) -> None:
        """Stop every client's process (a running turn is killed)."""
        for warm in self._pool.drain():
            await self._retire(warm, "shutdown", force=warm.busy)

    def _forget(self, warm: WarmClient) -> None:
        """Take `warm` out of the pool, if it (not a newer client of its context) is there."""
        if self._pool.get(warm.key) is warm:
            self._pool.remove(warm.key)

    def _begin(self, warm: WarmClient, task_id: str) -> None:
        warm.task_id, warm.prompt_sent, warm.pump = task_id, False, None

    def _release(self, warm: WarmClient) -> None:
        """The client's turn is over: idle from now (its model and permission mode are set
        back before a turn that does not choose them)."""
        warm.task_id, warm.prompt_sent, warm.pump = None, False, None
        warm.guard.mode = "default"
        if warm.approver is not None:
            warm.approver.end()
        if self._pool.get(warm.key) is warm:
            self._pool.release(warm.key)

    async def _retire(self, warm: WarmClient, reason: str, *, force: bool = False) -> None:
        """Forget `warm` and stop its process: in the background while serve() runs."""
        self._forget(warm)
        log.info("claude.retire", reason=reason, pid=warm.pid, session_id=warm.session_id)
        if self._tg is None:
            await self._stop(warm, force)
            return
        done = anyio.Event()
        if warm.session_id is not None:
            self._stopping_sessions[warm.session_id] = done
        self._tg.start_soon(self._stop, warm, force, done)

    async def _stop(self, warm: WarmClient, force: bool, done: anyio.Event | None = None) -> None:
        try:
            # Shielded: a shutdown that cancels serve() still waits for the process to go.
            with anyio.CancelScope(shield=True):
                await process.stop(warm.client, warm.pid, grace=self._stop_grace, force=force)
        finally:
            if done is not None:
                done.set()
                sid = warm.session_id
                if sid is not None and self._stopping_sessions.get(sid) is done:
                    del self._stopping_sessions[sid]

    # ----- turns -----------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        """One turn on the context's warm client. Cancelling the consumer leaves the client
        busy with this turn; `interrupt(turn)` then stops it.

        The turn's messages are read by a pump task (in the backend's task group) into one
        item stream, which also carries the permission questions of `approvals.mode: ask`
        (the SDK calls `can_use_tool` from its own reader while the turn waits on messages);
        they are yielded in the order they happened."""
        try:
            warm, notes = await self._checkout(turn)
        except _ForkSourceMissingError:
            yield Failed("error", FORK_SOURCE_MISSING)
            return
        except BackendUnavailableError as exc:
            yield safe_failure(
                "unavailable", "Claude Code is not available.", event="claude.unavailable", exc=exc
            )
            return
        for note in notes:
            yield note
        refused = await self._prepare(warm, turn)
        if refused is not None:
            yield refused
            return
        state = TurnState(cost_before=warm.cost_total)
        send, receive = anyio.create_memory_object_stream[stream.Item](math.inf)
        with send, receive, stream.questions(warm.approver, send):
            warm.prompt_sent = True
            try:
                await warm.client.query(stream.once(user_message(turn)))
            except ClaudeSDKError as exc:
                log.warning("claude.turn_crashed", error=type(exc).__name__, pid=warm.pid)
            else:
                warm.pump = self._start_pump(warm, send.clone())
                async for item in receive:
                    if isinstance(item, stream.Ended):
                        break
                    state, events = self._on_item(warm, state, item)
                    for event in events:
                        yield event
                    if state.finished:
                        break
        if not state.finished:
            await self._retire(warm, "crashed", force=True)
            yield Failed("error", CRASHED)

    async def _prepare(self, warm: WarmClient, turn: Turn) -> Failed | None:
        """Set the turn's model and mode on its client (control.prepare); a Failed, its
        client retired, when Claude Code does not take them."""
        try:
            await control.prepare(warm, turn.options, self._config)
        except control.OptionsRefusedError as exc:
            await self._retire(warm, "options refused", force=True)
            return safe_failure(
                "error",
                "Claude Code did not take the model or mode this message chose.",
                event="claude.options_refused",
                exc=exc,
            )
        return None

    def _on_item(
        self, warm: WarmClient, state: TurnState, item: stream.Item
    ) -> tuple[TurnState, list[BackendEvent]]:
        if isinstance(item, stream.Continued):
            return carry(state, item.result), []
        if isinstance(item, ApprovalRequest):
            # The engine waits for the caller's answer, then reads on.
            return state, [item]
        if isinstance(item, stream.Ended):  # pragma: no cover - run_turn stops before it
            return state, []
        state, events = map_message(state, item)
        if state.session_id is not None:
            warm.session_id = state.session_id
        if state.finished:
            # Before the result's events go out: a consumer may stop at a Failed.
            self._finish(warm, state)
        return state, events

    def _start_pump(self, warm: WarmClient, send: MemoryObjectSendStream[stream.Item]) -> Pump:
        pump = Pump()
        if self._tg is None:
            raise BackendUnavailableError("the Claude backend is not started")
        self._tg.start_soon(stream.pump, warm.client, pump, send, warm.pid)
        return pump

    def _finish(self, warm: WarmClient, state: TurnState) -> None:
        self._record_cost(warm, state.cost_total)
        self._release(warm)

    def _record_cost(self, warm: WarmClient, total: float | None) -> None:
        if total is None:
            return
        warm.cost_total = total
        if warm.session_id is not None:
            self._costs[warm.session_id] = total
            self._costs.move_to_end(warm.session_id)
            while len(self._costs) > COSTS_KEPT:
                self._costs.popitem(last=False)

    async def _checkout(self, turn: Turn) -> tuple[WarmClient, list[BackendEvent]]:
        """The client for this turn: the context's warm one when it holds the requested session,
        otherwise a new one (resuming `turn.session_id` when set)."""
        key: Key = (turn.principal, turn.context_id)
        warm = self._pool.get(key)
        if warm is not None:
            reason = unusable(warm, turn)
            if reason is None:
                self._begin(warm, turn.task_id)
                self._pool.take(key)
                return warm, []
            await self._retire(warm, reason, force=warm.busy)
        notes: list[BackendEvent] = []
        if turn.fork_of is not None and turn.session_id is None:
            try:
                warm = await self._connect(key, turn, turn.fork_of, fork=True)
            except _SessionNotFoundError:
                raise _ForkSourceMissingError(turn.fork_of) from None
        else:
            try:
                warm = await self._connect(key, turn, turn.session_id)
            except _SessionNotFoundError:
                notes.append(
                    Progress(
                        f"Claude Code has no session {turn.session_id} in its state directory; "
                        "this turn starts a new session."
                    )
                )
                warm = await self._connect(key, turn, None)
        self._begin(warm, turn.task_id)
        for evicted in self._pool.add(key, warm):
            await self._retire(evicted, "maxWarm")
        return warm, notes

    async def _connect(
        self, key: Key, turn: Turn, resume: str | None, *, fork: bool = False
    ) -> WarmClient:
        """A new client (a Claude Code process) for `turn`'s context, resuming `resume` (with
        `fork`: starting a fork of it); under `approvals.mode: ask`, its permission requests
        that the configured rules leave open go to the caller (wrappers/claude/approvals.py)."""
        stopping = self._stopping_sessions.get(resume) if resume is not None else None
        if stopping is not None:
            await stopping.wait()
        marker = uuid.uuid4().hex
        stderr = stream.StderrTail()
        approver = Approver() if turn.approvals == "ask" else None
        guard = control.Guard()
        effort = control.effort(turn.options)
        client = ClaudeSDKClient(
            options.build_options(
                self._config,
                cli=self._cli,
                resume=resume,
                cwd=turn.cwd,
                marker=marker,
                stderr=stderr,
                can_use_tool=approver.can_use_tool if approver is not None else None,
                hooks=guard.hooks(),
                effort=effort,
                fork=fork,
            )
        )
        try:
            await client.connect()
        except CLINotFoundError as exc:
            raise BackendUnavailableError(
                f"the Claude Code binary {self._cli} cannot be run"
            ) from exc
        except ClaudeSDKError as exc:
            text = exc.result if isinstance(exc, ResultError) and exc.result else ""
            text = text or "\n".join(stderr.lines)
            if resume is not None and "No conversation found" in text:
                raise _SessionNotFoundError from exc
            log.warning("claude.start_failed", error=type(exc).__name__, stderr=list(stderr.lines))
            raise BackendUnavailableError(
                "Claude Code did not start (see the daemon log for its output)"
            ) from exc
        pid = await process.started(marker)
        log.info("claude.started", pid=pid, resume=resume, fork=fork)
        # A resumed session's cost starts from its earlier total (unknown after a restart); a
        # fork's from nothing (its process counts only its own turns).
        cost = self._costs.get(resume) if resume is not None and not fork else 0.0
        return WarmClient(
            key=key,
            client=client,
            pid=pid,
            # A fork's own id comes with its first message.
            session_id=None if fork else resume,
            cost_total=cost,
            approver=approver,
            cwd=turn.cwd,
            effort=effort,
            model=self._config.model,
            permission_mode=self._config.permission_mode,
            guard=guard,
        )

    async def interrupt(self, turn: Turn) -> None:
        """Stop the turn: Claude Code's own interrupt (the process stays warm for the next turn
        of the context), or, when it does not end the turn within the grace period, kill the
        process. Returns once the agent has stopped."""
        warm = self._pool.get((turn.principal, turn.context_id))
        if warm is None or warm.task_id != turn.task_id:
            return
        if not warm.prompt_sent:
            self._release(warm)
            return
        pump = warm.pump
        if pump is not None and pump.pending and not pump.done.is_set():
            # Claude Code runs a steered message it has not taken yet right after its
            # interrupt: the process goes instead (the next turn resumes the session).
            pump.interrupted = True
            self._forget(warm)
            log.info("claude.interrupt_steered", pid=warm.pid, task_id=turn.task_id)
            await self._stop(warm, force=True)
            return
        stopped = False
        with anyio.move_on_after(self._interrupt_grace):
            try:
                if pump is None:
                    # The prompt went out but the turn was cancelled before its reader started.
                    await warm.client.interrupt()
                    pump = self._start_pump(warm, stream.discard())
                elif not pump.done.is_set():
                    # A permission question still waiting is cancelled by Claude Code itself.
                    pump.interrupted = True
                    await warm.client.interrupt()
                await pump.done.wait()
            except ClaudeSDKError as exc:
                log.warning("claude.interrupt_failed", error=type(exc).__name__, pid=warm.pid)
        if pump is not None and pump.result is not None:
            stopped = True
            self._record_cost(warm, pump.result.total_cost_usd)
        if stopped:
            log.info("claude.interrupted", pid=warm.pid, task_id=turn.task_id)
            self._release(warm)
            return
        self._forget(warm)
        log.warning("claude.interrupt_timeout", pid=warm.pid, task_id=turn.task_id)
        await self._stop(warm, force=True)

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        """Write `parts` into `turn` while it runs on its context's client (wrappers/claude/
        control.py says how Claude Code takes them)."""
        warm = self._pool.get((turn.principal, turn.context_id))
        pump = warm.pump if warm is not None and warm.task_id == turn.task_id else None
        if warm is None or pump is None:
            raise SteerRefusedError("the turn is not running on a Claude Code process")
        await control.steer(warm.client, pump, parts)
        log.info("claude.steered", pid=warm.pid, task_id=turn.task_id)

    def capabilities(self) -> Capabilities:
        return control.capabilities()

    async def drop_session(self, session_id: str) -> None:
        self._costs.pop(session_id, None)
        for warm in [w for w in self._pool.values() if w.session_id == session_id]:
            if not warm.busy:
                await self._retire(warm, "session dropped")

    # ----- status ----------------------------------------------------------------------------

    async def health(self) -> Health:
        if self._tg is None:
            return Health(ok=False, detail="not running")
        return Health(ok=True, detail=f"{len(self._pool)} warm session(s)")

    async def diagnose(self) -> list[Diagnosis]:
        return await diagnose.diagnose(self._config)

    def warm_sessions(self) -> int:
        """Claude Code processes kept warm now (the daemon's `a2a_sessions_warm` gauge)."""
        return len(self._pool)

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return options.resume_command(self._config, session_id, cwd)

    def credentials_fix(self) -> str:
        return f"On the daemon's host, {CREDENTIALS_HINT}; then send the message again."
