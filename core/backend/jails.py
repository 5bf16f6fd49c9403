"""One backend instance per sandbox: what makes an agent server shared by several contexts
stay inside one principal's walls.

`PerJail` is a Backend made of instances of the configured backend, one per jail key (a
principal, or a principal's context with `sandbox.scope: context`), each made on the first turn
of its key, started, served in `PerJail.serve`'s task group, and closed at the end. Everything an
instance does (start, serve, each step of a turn, interrupt, drop) runs inside
`sandbox.serving(its jail)`, so every process it starts (by the kit's `spawn`, or by an SDK
given `sandbox.sdk_cli`) is in that jail, and its children too. A backend with one agent server
for all its sessions thus runs one server per principal; a backend that starts a process per
session keeps doing that, inside the principal's jail.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from core.backend import Backend, BackendEvent, Content, Diagnosis, Health, SessionBound, Turn
from core.backend.base import BackendUnavailableError, serve_backend
from core.backend.control import Capabilities, Steerable, SteerRefusedError, capabilities_of
from core.backend.sandbox import Jail, serving

log = structlog.get_logger(__name__)

JailOf = Callable[[str, str], Jail]
"""The jail of (principal, context id)."""
Make = Callable[[Jail], Backend]
"""A new, unstarted instance of the backend for a jail (its agent home there)."""


@dataclass(eq=False)
class _Instance:
    jail: Jail
    backend: Backend
    stopped: anyio.Event = field(default_factory=anyio.Event)


class PerJail:
    def __init__(self, template: Backend, make: Make, jail_of: JailOf) -> None:
        self.name = template.name
        self._template = template  # never started: diagnose and resume commands only
        self._make = make
        self._jail_of = jail_of
        self._instances: dict[str, _Instance] = {}
        self._sessions: dict[str, str] = {}  # backend session id -> jail key
        self._lock = anyio.Lock()
        self._starting: dict[str, anyio.Lock] = {}  # one start at a time per jail, not overall
        self._tg: TaskGroup | None = None
        # What the daemon's tracing reads of a backend, as the template says it.
        self.model_provider: str | None = getattr(template, "model_provider", None)
        if callable(getattr(template, "warm_sessions", None)):
            self.warm_sessions = self._warm_sessions

    def _warm_sessions(self) -> int:
        """The warm sessions of every instance (the daemon's `a2a_sessions_warm` gauge)."""
        instances = list(self._instances.values())
        return sum(int(getattr(i.backend, "warm_sessions", lambda: 0)()) for i in instances)

    async def start(self) -> None:
        """Nothing starts before a principal's first turn."""

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await anyio.sleep_forever()
            finally:
                self._tg = None

    async def aclose(self) -> None:
        async with self._lock:
            instances, self._instances = list(self._instances.values()), {}
        for instance in instances:
            with serving(instance.jail):
                try:
                    await instance.backend.aclose()
                except Exception:
                    log.exception("sandbox.instance_close_failed", jail=instance.jail.key)

    async def _instance(self, turn: Turn) -> _Instance:
        jail = self._jail_of(turn.principal, turn.context_id)
        known = self._instances.get(jail.key)
        if known is not None:
            return known
        async with self._starting.setdefault(jail.key, anyio.Lock()):
            known = self._instances.get(jail.key)
            if known is not None:
                return known
            if self._tg is None:
                raise BackendUnavailableError("the backend is not serving (shutting down?)")
            with serving(jail):
                backend = self._make(jail)
                try:
                    await backend.start()
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        await backend.aclose()
                    raise
            instance = _Instance(jail, backend)
            try:
                await self._tg.start(self._serve, instance)
            except BaseException:
                with anyio.CancelScope(shield=True), serving(jail):
                    await backend.aclose()
                raise
            self._instances[jail.key] = instance
            log.info("sandbox.instance_started", jail=jail.key)
            return instance

    async def _serve(
        self, instance: _Instance, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        with serving(instance.jail):
            try:
                await serve_backend(instance.backend, task_status=task_status)
            finally:
                instance.stopped.set()

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        instance = await self._instance(turn)
        if turn.session_id is not None:
            self._sessions[turn.session_id] = instance.jail.key
        events = instance.backend.run_turn(turn)
        try:
            while True:
                # Each step in the jail's context: the processes it starts are the jail's.
                with serving(instance.jail):
                    try:
                        event = await anext(events)
                    except StopAsyncIteration:
                        return
                if isinstance(event, SessionBound):
                    self._sessions[event.session_id] = instance.jail.key
                yield event
        finally:
            close = getattr(events, "aclose", None)
            if close is not None:
                with serving(instance.jail):
                    await close()

    def capabilities(self) -> Capabilities:
        """What the backend declares: a started instance's word (its agent may have reported
        more, e.g. its models), else the never-started template's."""
        started = next(iter(self._instances.values()), None)
        return capabilities_of(self._template if started is None else started.backend)

    async def steer(self, turn: Turn, parts: tuple[Content, ...]) -> None:
        """Into the running turn, through the instance of its jail (the one running it)."""
        instance = self._instances.get(self._jail_of(turn.principal, turn.context_id).key)
        if instance is None or not isinstance(instance.backend, Steerable):
            raise SteerRefusedError("no sandboxed instance runs a turn that can take it")
        with serving(instance.jail):
            await instance.backend.steer(turn, parts)

    async def interrupt(self, turn: Turn) -> None:
        instance = self._instances.get(self._jail_of(turn.principal, turn.context_id).key)
        if instance is not None:
            with serving(instance.jail):
                await instance.backend.interrupt(turn)

    async def drop_session(self, session_id: str) -> None:
        # A session no instance of this run served holds nothing live: nothing to drop (and
        # the unsandboxed template must never start an agent to drop it).
        key = self._sessions.pop(session_id, None)
        instance = self._instances.get(key) if key is not None else None
        if instance is not None:
            with serving(instance.jail):
                await instance.backend.drop_session(session_id)

    async def health(self) -> Health:
        for instance in list(self._instances.values()):
            health = await instance.backend.health()
            if not health.ok:
                return Health(False, f"{instance.jail.key}: {health.detail}")
        return Health(True, f"{len(self._instances)} sandboxed agent instance(s)")

    async def diagnose(self) -> list[Diagnosis]:
        return await self._template.diagnose()

    def resume_command(self, session_id: str, cwd: Path | None = None) -> str | None:
        return self._template.resume_command(session_id, cwd)
