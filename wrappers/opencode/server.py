"""The OpenCode server the backend talks to: a supervised `opencode serve` child, or a running
server given by `serverUrl`.

`OpencodeServer.run` is the supervisor. Started with `tg.start()`, it is ready once the server
listens and the shared event reader is connected; it then restarts the child whenever it exits
(sessions survive in its SQLite), telling in-flight turns through the router that their events
are lost. Cancelling it stops the child: its whole process group gets SIGTERM, then SIGKILL after
a grace period, and is reaped.
"""

from __future__ import annotations

import secrets
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import anyio
import structlog
from anyio.abc import ByteReceiveStream, Process, TaskGroup, TaskStatus
from anyio.streams.text import TextReceiveStream

from core.backend.base import BackendUnavailableError
from core.backend.process import spawn, stop
from wrappers.opencode.client import OpencodeClient
from wrappers.opencode.config import OpencodeConfig
from wrappers.opencode.launch import build_launch, find_binary
from wrappers.opencode.router import EventRouter

log = structlog.get_logger(__name__)

STOP_GRACE = 5.0  # s between SIGTERM and SIGKILL (OpenCode exits in ~0.1 s on SIGTERM)
RESTART_BACKOFF = (0.0, 1.0, 2.0, 5.0, 10.0, 30.0)  # s before each successive restart
_LISTENING = "opencode server listening on "


def split_credentials(url: str) -> tuple[str, str | None, str]:
    """`http://user:pw@host:port` -> (`http://host:port`, password, user)."""
    parts = urlsplit(url)
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    plain = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
    return plain, parts.password, parts.username or "opencode"


class OpencodeServer:
    """Owns the server process (if any), the HTTP client and the event reader."""

    def __init__(
        self,
        config: OpencodeConfig,
        router: EventRouter,
        on_ready: Callable[[OpencodeClient, dict[str, Any]], Awaitable[None]] | None = None,
    ) -> None:
        """`on_ready` is awaited with the client and its `GET /config/providers` answer each time
        a server is up, before turns may use it (the backend learns what it offers)."""
        self._config = config
        self._on_ready = on_ready
        self._router = router
        self._directory = str(config.working_directory.expanduser().resolve())
        self._client: OpencodeClient | None = None
        # Clients of the running server for other directories (contexts' workspaces), each
        # with its own event reader in the connection's task group.
        self._at: dict[str, OpencodeClient] = {}
        self._tg: TaskGroup | None = None
        self._ready: anyio.Event | None = None  # created in run(): anyio needs a running loop
        self._current: _Ended | None = None
        self._stopped: anyio.Event | None = None
        self._generation = 0
        self.version: str | None = None
        self.pid: int | None = None

    @property
    def client(self) -> OpencodeClient | None:
        """The client of the running server, None while it (re)starts."""
        return self._client

    async def client_at(self, client: OpencodeClient, directory: Path | None) -> OpencodeClient:
        """`client` (the running server's) for `directory`: a context's workspace is a
        project directory of its own, whose events come on a stream of their own."""
        where = str(directory) if directory is not None else self._directory
        if where == self._directory or client is not self._client or self._tg is None:
            return client
        known = self._at.get(where)
        if known is not None:
            return known
        other = client.at(where)
        await self._tg.start(self._pump_directory, other)
        self._at[where] = other
        return other

    async def _pump_directory(
        self, client: OpencodeClient, *, task_status: TaskStatus[None]
    ) -> None:
        try:
            await self._router.pump(client, task_status=task_status)
        except Exception as exc:  # noqa: BLE001 - that directory's turns fail through Lost
            log.warning(
                "opencode.directory_events_failed", directory=client.directory, error=str(exc)
            )
        self._at.pop(client.directory, None)

    async def wait_ready(self, within: float) -> OpencodeClient:
        with anyio.move_on_after(within):
            if self._ready is not None:
                await self._ready.wait()
        if self._client is None:
            raise BackendUnavailableError("the OpenCode server is not running (restarting?)")
        return self._client

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Start the server, report ready, and keep it up until cancelled."""
        failures = 0
        first = True
        self._ready = anyio.Event()
        while True:
            try:
                async with self._connected() as reason:
                    failures = 0
                    if first:
                        first = False
                        task_status.started()
                    await reason.wait()
                    exit_reason = reason.text
            except Exception as group:
                exc = _unwrap(group)
                if not isinstance(exc, _START_ERRORS):
                    raise
                if first:
                    raise BackendUnavailableError(f"OpenCode did not start: {exc}") from exc
                exit_reason = f"restart failed: {exc}"
            self._router.lose_all(
                f"The OpenCode server stopped during this turn ({exit_reason}); the next turn "
                "uses a restarted server and the same session."
            )
            delay = RESTART_BACKOFF[min(failures, len(RESTART_BACKOFF) - 1)]
            failures += 1
            log.warning("opencode.server_restart", reason=exit_reason, delay_s=delay)
            await anyio.sleep(delay)  # back off between restarts of a crashing server

    async def restart(self, reason: str) -> None:
        """Stop the running child (its turns fail with `reason`) and return once it is gone;
        the supervisor then starts a new one. Attached servers are not ours to restart."""
        ended, stopped = self._current, self._stopped
        if self._config.server_url or ended is None or stopped is None:
            return
        log.error("opencode.server_forced_restart", reason=reason)
        ended.set(reason)
        await stopped.wait()

    @asynccontextmanager
    async def _connected(self) -> AsyncIterator[_Ended]:
        ended = _Ended()
        stopped = anyio.Event()
        self._current, self._stopped = ended, stopped
        async with anyio.create_task_group() as tg:
            if self._config.server_url:
                url, password, user = split_credentials(self._config.server_url)
                process = None
            else:
                password, user = secrets.token_urlsafe(24), "opencode"
                process, url = await self._spawn(tg, password, ended)
            client = OpencodeClient(
                url, directory=self._directory, password=password, username=user
            )
            try:
                health = await client.health()
                self.version = str(health.get("version") or "") or None
                await tg.start(self._pump, client, ended)
                # Boots the directory's instance (providers, plugins) now rather than in the
                # first turn: 1-3 s on a 2-core machine.
                providers = await client.providers()
                if self._on_ready is not None:
                    await self._on_ready(client, providers)
                self._client, self._tg = client, tg
                if self._ready is not None:
                    self._ready.set()
                log.info("opencode.server_ready", url=url, version=self.version, pid=self.pid)
                yield ended
            finally:
                self._client, self._tg = None, None
                self._at.clear()
                self._ready = anyio.Event()
                with anyio.CancelScope(shield=True):
                    await client.aclose()
                    if process is not None:
                        code = await stop(process, grace=STOP_GRACE)
                        self.pid = None
                        log.info("opencode.server_stopped", pid=process.pid, code=code)
                stopped.set()
                tg.cancel_scope.cancel()

    async def _pump(
        self, client: OpencodeClient, ended: _Ended, *, task_status: TaskStatus[None]
    ) -> None:
        await self._router.pump(client, task_status=task_status)
        ended.set("the event stream ended")

    async def _spawn(self, tg: TaskGroup, password: str, ended: _Ended) -> tuple[Process, str]:
        binary = find_binary(self._config.cli_path)
        launch = build_launch(self._config, binary, password)
        if not launch.cwd.is_dir():
            raise BackendUnavailableError(f"workingDirectory {launch.cwd} does not exist")
        process = await spawn(launch.argv, cwd=launch.cwd, env=launch.env)
        self.pid = process.pid
        self._generation += 1
        stderr_tail: deque[str] = deque(maxlen=20)
        stdout, stderr = process.stdout, process.stderr
        try:
            if stdout is None or stderr is None:  # never: both are pipes
                raise BackendUnavailableError("opencode serve has no output pipes")  # noqa: TRY301
            stderr_done = anyio.Event()
            tg.start_soon(self._drain, stderr, stderr_tail, "stderr", stderr_done)
            url = await self._listening(stdout, stderr_tail, stderr_done)
            tg.start_soon(self._drain, stdout, deque(maxlen=1), "stdout", anyio.Event())
            tg.start_soon(self._watch, process, stderr_tail, ended)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await stop(process, grace=STOP_GRACE)
            raise
        return process, url

    async def _listening(
        self, stdout: ByteReceiveStream, stderr_tail: deque[str], stderr_done: anyio.Event
    ) -> str:
        """The URL from the `opencode server listening on http://…` line."""
        timeout = self._config.startup_timeout / 1000
        buffered = ""
        with anyio.move_on_after(timeout):
            async for chunk in TextReceiveStream(stdout):
                buffered += chunk
                *complete, buffered = buffered.split("\n")
                for line in complete:
                    if line.startswith(_LISTENING):
                        return line[len(_LISTENING) :].strip()
            with anyio.move_on_after(2):  # the reason is the last thing it wrote to stderr
                await stderr_done.wait()
            last = stderr_tail[-1] if stderr_tail else "no output"
            raise BackendUnavailableError(f"opencode serve exited before listening: {last}")
        raise BackendUnavailableError(f"opencode serve did not listen within {timeout:g} s")

    async def _drain(
        self, stream: ByteReceiveStream, tail: deque[str], name: str, done: anyio.Event
    ) -> None:
        try:
            async for chunk in TextReceiveStream(stream, errors="replace"):
                for line in chunk.splitlines():
                    if line.strip():
                        tail.append(line.strip())
                        log.debug("opencode.output", stream=name, line=line.strip()[:500])
        except anyio.ClosedResourceError:
            pass  # stopped: `stop` closed the pipe
        finally:
            done.set()

    async def _watch(self, process: Process, stderr_tail: deque[str], ended: _Ended) -> None:
        code = await process.wait()
        last = f": {stderr_tail[-1]}" if stderr_tail else ""
        ended.set(f"opencode serve exited with code {code}{last}")


_START_ERRORS = (OSError, BackendUnavailableError, TimeoutError, aiohttp.ClientError)


def _unwrap(exc: BaseException) -> BaseException:
    """The one exception inside (nested) single-member exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


class _Ended:
    """Set once, with why the server connection ended."""

    def __init__(self) -> None:
        self._event = anyio.Event()
        self.text = ""

    def set(self, text: str) -> None:
        if not self._event.is_set():
            self.text = text
            self._event.set()

    async def wait(self) -> None:
        await self._event.wait()
