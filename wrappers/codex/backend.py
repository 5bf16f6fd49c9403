"""The Codex backend: one long-lived `codex app-server` per daemon, one thread per context.

- `start()` checks the working directory and the binary; `serve()` (in the engine's task
  group) starts the app-server and hosts the background work, and stops the app-server (and
  its process group) when it is cancelled; `aclose()` makes sure it is stopped.
- `run_turn()` takes the context's thread (warm, else `thread/resume` by id, else
  `thread/start`), emits `SessionBound` at once, starts the turn and maps its notifications
  (`wrappers.codex.events`). A thread stays loaded (warm) after its turn; idle ones are unloaded
  after `warmIdle`, and the least recently used beyond `maxWarm`.
- With `turn.approvals == "ask"` the turn runs with approval policy `on-request`, and each
  approval request Codex sends becomes an `ApprovalRequest` (`wrappers.codex.approvals`); the
  turn waits for its answer. Otherwise the config's policy (`never`) holds and nothing is asked.
- `interrupt()` declines the approval requests still open, sends `turn/interrupt`, then stops
  the commands the turn left running, and returns once Codex reports both ended; if that
  takes longer than `INTERRUPT_GRACE`, the app-server is stopped. The thread goes on with the
  next turn.
- If the app-server dies, the turns it was running fail with the reason, and the next turn
  starts a new one (resuming its thread by id).
- Conversation control (`wrappers.codex.control`): `steer()` adds a message to the running
  turn (`turn/steer`, with its turn id); a turn with `fork_of` runs on a `thread/fork` of that
  thread; a turn's options (model, effort, mode) are stated in its `turn/start`, and every
  other turn states the configured values again (Codex would keep them).
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
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
    TextContent,
    Turn,
    in_directory,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.control import Capabilities, SteerRefusedError
from core.backend.pool import WarmPool
from wrappers.codex.approvals import PatchPaths, approval_request, result_for
from wrappers.codex.appserver import (
    AppServer,
    AppServerError,
    AppServerExitedError,
    Notification,
    Tap,
)
from wrappers.codex.background import Background
from wrappers.codex.config import CodexConfig
from wrappers.codex.control import (
    Catalogue,
    capabilities,
    read_catalogue,
    steer_turn,
    turn_settings,
)
from wrappers.codex.diagnose import diagnose
from wrappers.codex.events import TurnState, map_notification
from wrappers.codex.failures import server_gone, turn_refused
from wrappers.codex.options import (
    Launch,
    check_working_directory,
    codex_binary,
    credentials_fix,
    launch,
    thread_params,
)
from wrappers.codex.stopping import ActiveTurn, stop_commands, stop_turn
from wrappers.codex.threads import WarmThread

log = structlog.get_logger(__name__)

UNLOAD_WAIT = 5.0
REQUEST_TIMEOUT = 60.0


@dataclass
class _Unloading:
    done: anyio.Event = field(default_factory=anyio.Event)


class CodexBackend(BackendBase):
    name = "codex"
    # Whose models it runs (gen_ai.provider.name of the daemon's traces).
    model_provider = "openai"

    def __init__(
        self,
        config: CodexConfig,
        *,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        tap: Tap | None = None,
    ) -> None:
        """`environ` is the environment the agent inherits (default: the daemon's); `tap`
        sees every message the app-server sends (recording fixtures)."""
        self.config = config
        self._environ = dict(os.environ if environ is None else environ)
        self._tap = tap
        self._threads: WarmPool[str, WarmThread] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle, clock=clock
        )
        self._active: dict[str, ActiveTurn] = {}
        self._opening: dict[str, anyio.Event] = {}
        self._unloading: dict[str, _Unloading] = {}
        self._server: AppServer | None = None
        self._server_lock = anyio.Lock()
        self._background: Background | None = None
        self._launch: Launch | None = None
        self._catalogue: Catalogue | None = None

    # ----- lifecycle -----------------------------------------------------------------------

    async def start(self) -> None:
        try:
            check_working_directory(self.config)
            binary = codex_binary(self.config)
        except (OSError, ValueError) as exc:
            raise BackendUnavailableError(str(exc)) from exc
        self._launch = launch(self.config, binary, self._environ)

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the app-server, then unload idle threads until cancelled; then stop the
        app-server before the background group ends (background.py says why)."""
        until = anyio.Event()
        failed: list[Exception] = []
        async with anyio.create_task_group() as tg:
            await tg.start(Background.host, self._host, until)
            try:
                try:
                    await self._ensure_server()
                except Exception as exc:  # noqa: BLE001 - raised below, not in an exception group
                    failed.append(exc)
                else:
                    task_status.started()
                    await self._evict_idle_forever()
            finally:
                with anyio.CancelScope(shield=True):
                    await self.aclose()
                until.set()
        if failed:
            raise failed[0]

    def _host(self, background: Background | None) -> None:
        self._background = background

    async def aclose(self) -> None:
        """Stop the app-server (every thread stays on disk). Idempotent."""
        server, self._server = self._server, None
        if server is not None:
            await server.aclose()
        self._threads.drain()

    @property
    def app_server_pid(self) -> int | None:
        """The pid of the running app-server (its process group id too), if one runs."""
        server = self._server
        return server.pid if server is not None and server.running else None

    @property
    def warm_threads(self) -> list[str]:
        """The threads loaded in the app-server, least recently used first."""
        return self._threads.keys()

    async def _ensure_server(self) -> AppServer:
        async with self._server_lock:
            server = self._server
            if server is not None and server.running:
                return server
            if self._background is None or self._launch is None:
                raise RuntimeError("the codex backend is not started")
            if server is not None:
                log.warning("codex.app_server.replaced", reason=server.exit_reason)
                self._threads.drain()
            try:
                self._server = await AppServer.launch(
                    self._background.task_group, self._launch, tap=self._tap
                )
            except OSError as exc:
                raise BackendUnavailableError(f"cannot start codex app-server: {exc}") from exc
            log.info("codex.app_server.started", pid=self._server.pid, version=self._server.version)
            self._catalogue = await read_catalogue(self._server) or self._catalogue
            return self._server

    def capabilities(self) -> Capabilities:
        """What a message may choose (wrappers.codex.control says how each is decided)."""
        return capabilities(self.config, self._catalogue)

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        """Add `parts` to the running turn of `turn.task_id` (`turn/steer`, with its turn id,
        so a message never lands in a later turn)."""
        opening = self._opening.get(turn.task_id)
        if opening is not None:
            with anyio.move_on_after(REQUEST_TIMEOUT):
                await opening.wait()
        active = self._active.get(turn.task_id)
        if active is None:
            raise SteerRefusedError(f"no running turn for task {turn.task_id}")
        with anyio.move_on_after(REQUEST_TIMEOUT):
            await active.known.wait()
        if active.finished or active.stopped is not None or active.turn_id is None:
            raise SteerRefusedError(f"the turn of task {turn.task_id} is ending")
        try:
            await steer_turn(active.server, active.thread_id, active.turn_id, parts)
        except (AppServerError, AppServerExitedError, TimeoutError) as exc:
            raise SteerRefusedError(f"codex refused the steer: {exc}") from exc

    # ----- turns ---------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        # A steer arriving while the thread opens waits for the turn instead of being refused.
        opened = self._opening[turn.task_id] = anyio.Event()
        try:
            opening = await self._begin(turn)
            if isinstance(opening, Failed):
                yield opening
                return
            server, thread, notes = opening
            active = self._active[turn.task_id] = ActiveTurn(thread.id, server)
        finally:
            self._opening.pop(turn.task_id, None)
            opened.set()
        try:
            yield SessionBound(thread.id)
            for note in notes:
                yield note
            asks = turn.approvals == "ask"
            with server.listen(thread.id, asks=asks) as notifications:
                try:
                    # Shielded: once asked, the turn runs; its id must be known to stop it.
                    with anyio.CancelScope(shield=True), anyio.fail_after(REQUEST_TIMEOUT):
                        started = await server.request(
                            "turn/start", turn_settings(self.config, self._catalogue, thread, turn)
                        )
                except (AppServerError, AppServerExitedError, TimeoutError) as exc:
                    active.end()
                    yield turn_refused(exc)
                    return
                turn_id = str(started["turn"]["id"])
                active.begin(turn_id)
                state = TurnState(turn_id, thread.model)
                patches = PatchPaths()
                async for notification in notifications:
                    if notification.request_id is not None:
                        question = self._question(turn, notification, patches)
                        active.asking.add(notification.request_id)
                        yield question
                        await self._answer(active, notification.request_id, question)
                        continue
                    patches.see(notification.method, notification.params)
                    state, events = map_notification(
                        state, notification.method, notification.params
                    )
                    for event in events:
                        yield event
                    if state.done:
                        active.end()
                        return
                active.end()
                yield server_gone("error", server.exit_reason)
        finally:
            if active.finished:
                self._active.pop(turn.task_id, None)
                self._threads.release(thread.id)
            elif self._background is not None:
                # The consumer went away mid-turn (cancel, deadline, or its own failure): stop
                # the agent now; interrupt() waits for this same stop.
                self._background.start_soon(self._stop, active, name="codex-stop-turn")

    async def _begin(self, turn: Turn) -> tuple[AppServer, WarmThread, list[BackendEvent]] | Failed:
        """The app-server and the turn's thread (with notes for the caller), or why not."""
        try:
            server = await self._ensure_server()
            thread, notes = await self._open_thread(server, turn)
        except AppServerExitedError as exc:
            return server_gone("unavailable", str(exc))
        except BackendUnavailableError as exc:
            return safe_failure(
                "unavailable", "Codex is not available.", event="codex.unavailable", exc=exc
            )
        except (AppServerError, TimeoutError) as exc:
            said = (
                "Codex could not open a thread."
                if turn.fork_of is None
                else f"Codex could not fork session {turn.fork_of}."
            )
            return safe_failure("error", said, event="codex.thread.failed", exc=exc)
        return server, thread, notes

    def _question(self, turn: Turn, request: Notification, patches: PatchPaths) -> ApprovalRequest:
        request_id = f"{turn.task_id}:{request.request_id}"
        return approval_request(request_id, request.method, request.params, patches)

    async def _answer(
        self, active: ActiveTurn, request_id: int | str, question: ApprovalRequest
    ) -> None:
        """Pass the caller's answer on to Codex; a denial's message is steered into the turn
        first, so the model reads it with the rejected tool call."""
        answer = await question.reply.wait()
        if answer.message and answer.decision == "deny" and active.turn_id is not None:
            note = f"The request was denied: {answer.message}"
            try:
                await steer_turn(
                    active.server, active.thread_id, active.turn_id, (TextContent(note),)
                )
            except (AppServerError, AppServerExitedError, TimeoutError) as exc:
                log.info("codex.approval.message_not_passed", error=str(exc))
        active.asking.discard(request_id)
        await active.server.respond(request_id, result_for(answer))

    async def _open_thread(
        self, server: AppServer, turn: Turn
    ) -> tuple[WarmThread, list[BackendEvent]]:
        """The thread for this turn, marked busy: warm, else resumed, else a new one; for the
        first turn of a fork, a fork of its source thread (which stays as it is)."""
        notes: list[BackendEvent] = []
        params = thread_params(self.config, turn.cwd)
        session_id = turn.session_id
        if turn.fork_of is not None:
            await self._settled(turn.fork_of)
            fork = {**params, "threadId": turn.fork_of, "excludeTurns": True}
            # A turn the source is running stays the source's: the fork gets the finished ones.
            for active in [a for a in self._active.values() if a.thread_id == turn.fork_of]:
                with anyio.move_on_after(REQUEST_TIMEOUT):
                    await active.known.wait()
                if not active.finished and active.turn_id is not None:
                    fork["beforeTurnId"] = active.turn_id
            with anyio.fail_after(REQUEST_TIMEOUT):
                forked = await server.request("thread/fork", fork)
            return self._register(server, str(forked["thread"]["id"]), forked), notes
        if session_id is not None:
            await self._settled(session_id)
            warm = self._threads.take(session_id)
            if warm is not None:
                return warm, notes
            try:
                with anyio.fail_after(REQUEST_TIMEOUT):
                    # excludeTurns: the history stays in Codex; we only need the thread loaded.
                    resumed = await server.request(
                        "thread/resume", {**params, "threadId": session_id, "excludeTurns": True}
                    )
                return self._register(server, session_id, resumed), notes
            except AppServerError as exc:
                log.warning("codex.thread.resume_failed", thread_id=session_id, error=exc.message)
                notes.append(
                    Progress(
                        f"Codex could not resume session {session_id}; this message starts a "
                        "new one"
                    )
                )
        with anyio.fail_after(REQUEST_TIMEOUT):
            started = await server.request("thread/start", params)
        return self._register(server, str(started["thread"]["id"]), started), notes

    async def _settled(self, thread_id: str) -> None:
        """Wait until nothing else is happening to the thread: a stop of its previous turn, or
        its unloading."""
        for active in list(self._active.values()):
            if active.thread_id == thread_id and active.stopped is not None:
                await active.stopped.wait()
        unloading = self._unloading.get(thread_id)
        if unloading is not None:
            await unloading.done.wait()

    def _register(
        self, server: AppServer, thread_id: str, response: dict[str, object]
    ) -> WarmThread:
        model, sandbox = response.get("model"), response.get("sandbox")
        thread = WarmThread(
            thread_id,
            model if isinstance(model, str) else None,
            sandbox if isinstance(sandbox, dict) else None,
        )
        evicted = [t.id for t in self._threads.add(thread_id, thread)]
        if evicted and self._background is not None:
            # Marked now, so a turn arriving for one of them waits for the unload to finish
            # before resuming it, instead of racing it.
            for evicted_id in evicted:
                self._unloading.setdefault(evicted_id, _Unloading())
            self._background.start_soon(self._unload, server, evicted, name="codex-unload")
        return thread

    async def interrupt(self, turn: Turn) -> None:
        """Stop the turn of `turn.task_id` and return once it has stopped."""
        active = self._active.get(turn.task_id)
        if active is not None and not active.finished:
            await self._stop(active)

    async def _stop(self, active: ActiveTurn) -> None:
        """Stop a turn once, whoever asks first; everyone returns when it has stopped."""
        if active.stopped is not None:
            await active.stopped.wait()
            return
        active.stopped = anyio.Event()
        try:
            with anyio.CancelScope(shield=True):
                await stop_turn(active)
        finally:
            active.end()
            for task_id, entry in list(self._active.items()):
                if entry is active:
                    del self._active[task_id]
            self._threads.release(active.thread_id)
            active.stopped.set()

    # ----- warm threads --------------------------------------------------------------------

    async def drop_session(self, session_id: str) -> None:
        """Unload the thread (its files stay, so `codex resume` still finds it)."""
        if any(a.thread_id == session_id for a in self._active.values()):
            return
        server = self._server
        if self._threads.remove(session_id) is not None and server is not None and server.running:
            await self._unload(server, [session_id])

    async def _unload(self, server: AppServer, thread_ids: list[str]) -> None:
        """Stop what the threads still run, unsubscribe, and wait (briefly) until Codex reports
        each one closed; a turn for one of them meanwhile waits for this to finish."""
        for thread_id in thread_ids:
            unloading = self._unloading.setdefault(thread_id, _Unloading())
            try:
                reply: dict[str, object] = {}
                with server.listen(thread_id) as notifications:
                    with anyio.move_on_after(REQUEST_TIMEOUT):
                        await stop_commands(server, thread_id)
                        reply = await server.request("thread/unsubscribe", {"threadId": thread_id})
                    if reply.get("status") == "unsubscribed":
                        with anyio.move_on_after(UNLOAD_WAIT):
                            async for note in notifications:
                                if note.method == "thread/closed":
                                    break
            except (AppServerError, AppServerExitedError) as exc:
                log.info("codex.thread.unload_failed", thread_id=thread_id, error=str(exc))
            finally:
                unloading.done.set()
                self._unloading.pop(thread_id, None)
            log.debug("codex.thread.unloaded", thread_id=thread_id)

    async def evict_idle(self) -> list[str]:
        """Unload the threads idle for `warmIdle` now; returns their ids. The background
        evictor calls this whenever the next idle thread is due."""
        expired = [t.id for t in self._threads.expired()]
        server = self._server
        if expired and server is not None and server.running:
            await self._unload(server, expired)
        return expired

    async def _evict_idle_forever(self) -> None:
        while True:
            await self._threads.wait_due()
            await self.evict_idle()

    # ----- status --------------------------------------------------------------------------

    async def health(self) -> Health:
        server = self._server
        if server is None:
            return Health(False, "codex app-server not started")
        if not server.running:
            return Health(False, f"{server.exit_reason}; the next turn starts a new one")
        return Health(
            True,
            f"codex app-server {server.version} (pid {server.pid}), "
            f"{len(self._threads)} warm thread(s)",
        )

    async def diagnose(self) -> list[Diagnosis]:
        return await diagnose(self.config, self._environ)

    def credentials_fix(self) -> str:
        return credentials_fix(self.config)

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str:
        command = shlex.join(["codex", "resume", session_id])
        if self.config.home is not None:
            command = f"CODEX_HOME={shlex.quote(str(self.config.home.expanduser()))} {command}"
        return in_directory(command, cwd)
