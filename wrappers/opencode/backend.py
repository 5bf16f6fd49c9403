"""The OpenCode backend: turns through one `opencode serve`, one session per A2A context."""

from __future__ import annotations

import base64
import json
import shlex
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import structlog
from anyio.abc import TaskStatus

from core.backend import (
    BackendEvent,
    Content,
    DataContent,
    Diagnosis,
    Failed,
    FileContent,
    Health,
    SessionBound,
    TextContent,
    Turn,
    in_directory,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.control import Capabilities, SteerRefusedError
from core.backend.pool import WarmPool
from wrappers.opencode import control
from wrappers.opencode import diagnose as diagnostics
from wrappers.opencode.client import OpencodeClient, OpencodeHTTPError, new_message_id
from wrappers.opencode.config import OpencodeConfig
from wrappers.opencode.control import PromptChoice, prompt_choice
from wrappers.opencode.events import (
    AbortTurn,
    Action,
    AnswerApproval,
    RejectPermission,
    RejectQuestion,
    TurnMapper,
)
from wrappers.opencode.launch import session_permission, xdg_env
from wrappers.opencode.router import EventRouter, Lost, Subscription
from wrappers.opencode.server import OpencodeServer

log = structlog.get_logger(__name__)

# A turn's end: OpenCode sends `session.idle` once more after it finalises an aborted or failed
# message; this long at most we wait for that after an idle that came first.
SETTLE_GRACE = 2.0
INTERRUPT_TIMEOUT = 5.0  # s; the core gives interrupt() 10 s in all
READY_TIMEOUT = 60.0  # s a turn waits for a restarting server
_REPLIES = {"approve": "once", "approve_always": "always", "deny": "reject"}
_HTTP_ERRORS = (OpencodeHTTPError, aiohttp.ClientError, OSError, TimeoutError)


@dataclass
class _ActiveTurn:
    mapper: TurnMapper
    inbox: Subscription
    client: OpencodeClient
    choice: PromptChoice  # a steer runs with the turn's agent, model and effort
    # Set once the turn's prompt was sent (or refused): a steer sent before it would come
    # first.
    prompted: anyio.Event = field(default_factory=anyio.Event)


class _ForkError(Exception):
    """The session to fork is gone from OpenCode."""


class OpencodeBackend(BackendBase):
    """The `Backend` for OpenCode (docs/backends.md#opencode).

    `serve()` is the server supervisor (it starts the server and its event reader, restarts a
    crashed one, and stops it when cancelled), hosted in the engine's task group. Turns of
    different sessions run concurrently on the one server.
    """

    name = "opencode"

    def __init__(self, config: OpencodeConfig) -> None:
        self.config = config
        self._router = EventRouter()
        self._server = OpencodeServer(config, self._router, on_ready=self._learn)
        self._active: dict[str, _ActiveTurn] = {}
        # Sessions known to exist in OpenCode; a forgotten one is checked again on its next turn.
        self._warm: WarmPool[str, str] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle
        )
        # The project directory of each session started here (a context's workspace, or
        # workingDirectory): OpenCode binds a session to the directory it was made in.
        self._directories: dict[str, str] = {}
        self._model = control.split_model(config.model) if config.model else None
        self._declared = replace(
            control.BEFORE_START, models=(config.model,) if config.model else ()
        )

    # ----- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        directory = self.config.working_directory.expanduser()
        if not self.config.server_url and not directory.is_dir():
            raise BackendUnavailableError(f"opencode.workingDirectory {directory} does not exist")

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Ready once the server answers (a server that does not start raises
        BackendUnavailableError); keeps it up until cancelled, then stops it."""
        await self._server.run(task_status=task_status)

    def capabilities(self) -> Capabilities:
        return self._declared

    async def _learn(self, client: OpencodeClient, providers: dict[str, Any]) -> None:
        """What this server offers (its providers' models, their variants, the mode agents)
        and the model it uses by default (sent on every prompt: see `prompt_choice`)."""
        try:
            agents = await client.agents()
            if self._model is None:
                configured = (await client.config()).get("model")
                if isinstance(configured, str) and "/" in configured:
                    self._model = control.split_model(configured)
        except _HTTP_ERRORS as exc:
            log.warning("opencode.capabilities_unknown", error=str(exc))
            return
        model = "/".join(self._model) if self._model else None
        self._declared = control.declared(
            providers, agents, model=model, ours=not self.config.server_url
        )

    async def aclose(self) -> None:
        for active in list(self._active.values()):
            active.inbox.close()
        self._active.clear()

    @property
    def server_pid(self) -> int | None:
        """The pid of the `opencode serve` child (None when attached or not started)."""
        return self._server.pid

    async def health(self) -> Health:
        client = self._server.client
        if client is None:
            return Health(ok=False, detail="the OpenCode server is not running")
        try:
            body = await client.health()
        except _HTTP_ERRORS as exc:
            return Health(ok=False, detail=f"the OpenCode server does not answer: {exc}")
        return Health(ok=bool(body.get("healthy")), detail=f"opencode {body.get('version')}")

    async def diagnose(self) -> list[Diagnosis]:
        return await diagnostics.diagnose(self.config)

    def credentials_fix(self) -> str:
        return diagnostics.credentials_fix(self.config)

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str:
        command = f"opencode --session {shlex.quote(session_id)}"
        if self.config.home is not None:
            env = xdg_env(self.config.home.expanduser().resolve())
            command = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) + " " + command
        return in_directory(command, cwd)

    # ----- turns -------------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        try:
            client = await self._server.wait_ready(READY_TIMEOUT)
            client = await self._server.client_at(client, turn.cwd)
            session_id = await self._session_for(client, turn)
        except _ForkError:
            yield Failed(
                "error",
                "The conversation to fork from is no longer in OpenCode (its session is gone); "
                "start a new conversation instead.",
            )
            return
        except (*_HTTP_ERRORS, BackendUnavailableError) as exc:
            yield safe_failure(
                "unavailable", "OpenCode is not available.", event="opencode.unavailable", exc=exc
            )
            return
        yield SessionBound(session_id)
        choice = prompt_choice(turn.options, agent=self.config.agent, model=self._model)
        message_id = new_message_id()
        mapper = TurnMapper(
            session_id,
            message_id,
            max_retries=self.config.max_retries,
            approvals=turn.approvals,
        )
        active = _ActiveTurn(mapper, self._router.subscribe(session_id), client, choice)
        self._active[turn.task_id] = active
        ended = False
        try:
            try:
                # Shielded: once sent, the prompt is either accepted or refused, so interrupt()
                # knows whether there is anything to stop.
                with anyio.CancelScope(shield=True):
                    await client.prompt_async(
                        session_id,
                        message_id=message_id,
                        parts=[_part(c) for c in turn.parts],
                        agent=choice.agent,
                        model=choice.model,
                        variant=choice.variant,
                        system=self.config.system_prompt,
                    )
                active.prompted.set()
            except _HTTP_ERRORS as exc:
                ended = True
                active.prompted.set()
                # The error quotes up to 300 characters of OpenCode's response body.
                yield safe_failure(
                    "error",
                    "OpenCode refused the prompt.",
                    event="opencode.prompt.refused",
                    exc=exc,
                )
                return
            async with aclosing(self._follow(active)) as events:
                async for event in events:
                    yield event
            ended = True
            usage = mapper.usage()
            lost = mapper.failure
            if usage is not None:
                yield usage
            if lost is not None:
                yield lost
        finally:
            if ended:
                self._forget(turn.task_id)
            # Otherwise the consumer stopped early: interrupt() stops the agent and cleans up.

    async def _follow(self, active: _ActiveTurn) -> AsyncGenerator[BackendEvent, None]:
        """The turn's events until it is over (or its server is gone)."""
        mapper = active.mapper
        while not mapper.done:
            item = await self._next(active)
            if item is None:
                return  # an idle came before the last message was final; it will not come
            if isinstance(item, Lost):
                mapper.failure = safe_failure(
                    "error",
                    "The OpenCode server stopped during this turn; the next turn uses a restarted "
                    "server and the same session.",
                    event="opencode.turn.lost",
                    detail=item.reason,
                )
                return
            step = mapper.feed(item)
            for event in step.events:
                yield event
            # After the events: an approval is answered once the engine resumed us.
            for action in step.actions:
                await self._act(active, action)

    async def _next(self, active: _ActiveTurn) -> dict[str, Any] | Lost | None:
        mapper = active.mapper
        while mapper.idle_seen:
            with anyio.move_on_after(SETTLE_GRACE):
                return await active.inbox.receive()
            if not mapper.awaiting_steer:
                return None
            # A steer that came as the loop ended starts another one: no telling how soon.
        return await active.inbox.receive()

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        """Prompt the busy session: OpenCode's running loop takes the message at its next step
        (the next model request carries it) and the turn ends once, at the idle after its
        answer. A message that comes as the loop ends starts another loop of the same turn."""
        active = self._active.get(turn.task_id)
        if active is not None:
            await active.prompted.wait()
        if active is None or self._active.get(turn.task_id) is not active or active.mapper.done:
            raise SteerRefusedError(f"task {turn.task_id} has no running OpenCode turn")
        mapper = active.mapper
        message_id = new_message_id()
        mapper.steered(message_id)  # before the prompt: an idle in between must not end it
        choice = active.choice
        try:
            with anyio.CancelScope(shield=True):
                await active.client.prompt_async(
                    mapper.session_id,
                    message_id=message_id,
                    parts=[_part(c) for c in parts],
                    agent=choice.agent,
                    model=choice.model,
                    variant=choice.variant,
                    system=self.config.system_prompt,
                )
        except _HTTP_ERRORS as exc:
            mapper.unsteered(message_id)
            active.inbox.deliver({"type": "a2a.wake", "properties": {}})  # re-check `done`
            raise SteerRefusedError(f"OpenCode refused the steer: {exc}") from exc

    async def _act(self, active: _ActiveTurn, action: Action) -> None:
        session_id = active.mapper.session_id
        try:
            match action:
                case RejectPermission(request_id=request_id, message=message):
                    await active.client.reply_permission(request_id, "reject", message)
                case RejectQuestion(request_id=request_id):
                    await active.client.reject_question(request_id)
                case AnswerApproval(request_id=request_id, request=request):
                    answer = await request.reply.wait()
                    reply = _REPLIES[answer.decision]
                    message = answer.message or ("" if reply != "reject" else "Denied.")
                    await active.client.reply_permission(request_id, reply, message)
                case AbortTurn(reason=reason):
                    log.warning("opencode.turn_abort", session_id=session_id, reason=reason)
                    await active.client.abort(session_id)
        except _HTTP_ERRORS as exc:
            log.warning("opencode.action_failed", action=type(action).__name__, error=str(exc))

    async def interrupt(self, turn: Turn) -> None:
        """Abort the turn in OpenCode and return once the session is idle again.

        Should OpenCode still call the session busy after INTERRUPT_TIMEOUT, the server is
        restarted (its other turns fail too): a cancelled turn must really stop.
        """
        active = self._active.get(turn.task_id)
        if active is None:
            return
        mapper = active.mapper
        mapper.abandon_steers()
        try:
            with anyio.move_on_after(INTERRUPT_TIMEOUT):
                await self._abort_and_settle(active)
            if not mapper.done and await self._still_busy(active):
                await self._server.restart(
                    f"session {mapper.session_id} did not stop after an abort"
                )
        finally:
            self._forget(turn.task_id)

    async def _abort_and_settle(self, active: _ActiveTurn) -> None:
        mapper = active.mapper
        # The prompt was accepted; abort only once it runs, or it would run after the abort.
        while not mapper.started and not mapper.done:
            if not await self._feed_one(active):
                return
        if not mapper.done:
            try:
                await active.client.abort(mapper.session_id)
            except _HTTP_ERRORS as exc:
                log.warning("opencode.abort_failed", session_id=mapper.session_id, error=str(exc))
                return
        while not mapper.done:
            if not await self._feed_one(active):
                return

    async def _still_busy(self, active: _ActiveTurn) -> bool:
        try:
            with anyio.fail_after(2):
                return active.mapper.session_id in await active.client.busy_sessions()
        except _HTTP_ERRORS:
            return False  # the server is gone or restarting: nothing left running

    async def _feed_one(self, active: _ActiveTurn) -> bool:
        """Feed the next event to the mapper; False when no more will come."""
        item = await self._next(active)
        if item is None or isinstance(item, Lost):
            return False
        active.mapper.feed(item)
        return True

    def _forget(self, task_id: str) -> None:
        active = self._active.pop(task_id, None)
        if active is not None:
            active.inbox.close()

    # ----- sessions ----------------------------------------------------------------------------

    async def _session_for(self, client: OpencodeClient, turn: Turn) -> str:
        """The turn's session: a fork of `fork_of`, the warm one, the stored one if OpenCode
        still has it, or new."""
        self._evict()
        session_id = turn.session_id
        if turn.fork_of is not None:
            session_id = await self._fork(client, turn.fork_of)
        known = session_id is None or session_id in self._warm
        if not known and await client.get_session(str(session_id)) is None:
            log.warning("opencode.session_missing", session_id=session_id)
            session_id = None
        if session_id is None:
            title = f"A2A {turn.context_id[:8]}: {turn.text[:60]}".strip()
            session = await client.create_session(title=title, permission=self._rules())
            session_id = str(session["id"])
        self._warm.add(session_id, session_id, busy=False)
        self._directories[session_id] = client.directory
        return session_id

    async def _fork(self, client: OpencodeClient, source: str) -> str:
        """A native fork of `source` (its whole history; the source untouched), bound to the
        turn's directory (a fork keeps its source's; a forked context has a workspace of its
        own in worktree and copy mode)."""
        if await client.get_session(source) is None:
            raise _ForkError(source)
        fork = await client.fork_session(source)
        session_id = str(fork["id"])
        log.info("opencode.session_forked", source=source, session_id=session_id)
        if fork.get("directory") != client.directory:
            await client.move_session(session_id)
        rules = self._rules()
        if rules:  # a fork does not keep its source's session rules
            await client.add_permission(session_id, rules)
        return session_id

    def _rules(self) -> list[dict[str, str]] | None:
        """Session permission rules: only for an attached server (launch.session_permission)."""
        return session_permission(self.config) if self.config.server_url else None

    def _evict(self) -> None:
        """Forget sessions idle longer than warmIdle (the oldest go beyond maxWarm as they are
        added). A forgotten session is checked with OpenCode (and recreated if gone) on its
        next turn."""
        self._warm.expired()

    async def drop_session(self, session_id: str) -> None:
        """The session expired (ttl): forget it and delete it from OpenCode (best effort)."""
        self._warm.remove(session_id)
        client = self._server.client
        if client is None:
            return
        directory = self._directories.pop(session_id, None)
        if directory is not None:
            client = client.at(directory)
        try:
            await client.delete_session(session_id)
        except _HTTP_ERRORS as exc:
            log.warning("opencode.drop_failed", session_id=session_id, error=str(exc))


def _part(content: Content) -> dict[str, Any]:
    """One A2A part as an OpenCode prompt part."""
    match content:
        case TextContent(text=text):
            return {"type": "text", "text": text}
        case FileContent(data=data, url=url, name=name, media_type=media_type):
            mime = media_type or "application/octet-stream"
            if data is not None:
                url = f"data:{mime};base64,{base64.b64encode(data).decode()}"
            part = {"type": "file", "mime": mime, "url": url or ""}
            if name:
                part["filename"] = name
            return part
        case DataContent(data=data):
            return {"type": "text", "text": json.dumps(data)}
    raise TypeError(f"unsupported content {content!r}")
