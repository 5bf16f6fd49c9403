"""One ACP agent process and the `acp` library's client connection to it.

The process is started by `core.backend.process.spawn` (no shell, own process group,
parent-death signal, recorded for the orphan guard), so it and everything it starts end with
the daemon. The library speaks JSON-RPC over a message `Transport`; `ProcessTransport` is that
transport over the process's stdio (one JSON message a line), which keeps the process in our
supervisor's hands instead of the library's own spawner. The agent's stderr is drained into
the log (a full pipe would block the agent), at debug level: it may quote prompts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import structlog
from acp import PROTOCOL_VERSION
from acp.client.connection import ClientSideConnection
from acp.schema import (
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    InitializeResponse,
)
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream

from core.backend.process import spawn, stop
from wrappers.acp.client import DaemonClient

log = structlog.get_logger(__name__)

MAX_MESSAGE_BYTES = 50 * 1024 * 1024
INITIALIZE_TIMEOUT = 60.0
STOP_GRACE = 5.0


class ProcessTransport:
    """`acp`'s message Transport over a child's stdin and stdout (newline-delimited JSON)."""

    def __init__(self, process: Process) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError("the agent process needs piped stdin and stdout")
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._lock = anyio.Lock()

    async def send(self, message: dict[str, Any]) -> None:
        data = (json.dumps(message, separators=(",", ":")) + "\n").encode()
        async with self._lock:
            try:
                await self._stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise ConnectionError("the agent process is gone") from exc

    async def receive(self) -> dict[str, Any] | None:
        while True:
            try:
                line = await self._stdout.receive_until(b"\n", MAX_MESSAGE_BYTES)
            except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                return None
            except anyio.BrokenResourceError:
                return None
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                # Some agents print a banner or a warning on stdout: not a message.
                log.debug("acp.stdout_not_json", line=line[:200].decode(errors="replace"))
                continue
            if isinstance(message, dict):
                return message

    async def close(self) -> None:
        await self._stdin.aclose()


class AgentProcess:
    """A started, initialized agent: `connection` to call it, `info` of its initialize."""

    def __init__(
        self,
        process: Process,
        connection: ClientSideConnection,
        client: DaemonClient,
        info: InitializeResponse,
    ) -> None:
        self.process = process
        self.connection = connection
        self.client = client
        self.info = info
        self.exited = anyio.Event()

    @property
    def alive(self) -> bool:
        return not self.exited.is_set() and self.process.returncode is None

    @property
    def can_load(self) -> bool:
        return bool(self.info.agent_capabilities and self.info.agent_capabilities.load_session)

    @property
    def can_close(self) -> bool:
        caps = self.info.agent_capabilities
        sessions = caps.session_capabilities if caps else None
        return sessions is not None and sessions.close is not None

    @property
    def can_fork(self) -> bool:
        caps = self.info.agent_capabilities
        sessions = caps.session_capabilities if caps else None
        return sessions is not None and sessions.fork is not None

    @property
    def takes_images(self) -> bool:
        caps = self.info.agent_capabilities
        return bool(caps and caps.prompt_capabilities and caps.prompt_capabilities.image)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        """One request as raw JSON: for what the library does not model (the unstable
        `models` of an open response, `session/set_model`). Raises RequestError,
        ConnectionError."""
        # The library's Connection under its typed client: the same ids, the same reader.
        return await self.connection._conn.send_request(method, params)

    @property
    def version(self) -> str:
        agent = self.info.agent_info
        return f"{agent.name} {agent.version}" if agent else "unknown agent"

    async def aclose(self) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await self.connection.close()
            except Exception:
                log.debug("acp.connection_close_failed", exc_info=True)
            await stop(self.process, grace=STOP_GRACE)
            self.exited.set()


async def start_agent(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    client: DaemonClient,
    tasks: TaskGroup,
    file_system: bool = True,
) -> AgentProcess:
    """Spawn `argv`, connect, `initialize`; the stderr drain and the exit watcher run in
    `tasks`. `file_system`: whether the daemon offers `fs/*`. Raises OSError when it cannot
    start, RequestError / TimeoutError / ConnectionError when it does not initialize (the
    process is stopped then)."""
    process = await spawn(argv, cwd=cwd, env=env)
    if process.stderr is not None:
        tasks.start_soon(_drain, process.stderr, process.pid)
    connection = ClientSideConnection(client, ProcessTransport(process))
    try:
        with anyio.fail_after(INITIALIZE_TIMEOUT):
            info = await connection.initialize(
                protocol_version=PROTOCOL_VERSION,
                client_capabilities=ClientCapabilities(
                    fs=FileSystemCapabilities(
                        read_text_file=file_system, write_text_file=file_system
                    ),
                    terminal=True,
                ),
                client_info=Implementation(name="a2a-wrapper", version="0"),
            )
    except BaseException:
        with anyio.CancelScope(shield=True):
            await connection.close()
            await stop(process, grace=1.0)
        raise
    agent = AgentProcess(process, connection, client, info)
    tasks.start_soon(_watch, agent)
    log.info("acp.agent_started", pid=process.pid, agent=agent.version, load=agent.can_load)
    return agent


async def _drain(stream: Any, pid: int) -> None:
    try:
        async for chunk in stream:
            log.debug("acp.agent_stderr", pid=pid, text=chunk[:2000].decode(errors="replace"))
    except (anyio.BrokenResourceError, anyio.ClosedResourceError):
        pass


async def _watch(agent: AgentProcess) -> None:
    code = await agent.process.wait()
    agent.exited.set()
    log.info("acp.agent_exited", pid=agent.process.pid, code=code)
    # Release the connection's waiters: pending requests fail with ConnectionError.
    with anyio.CancelScope(shield=True):
        try:
            await agent.connection.close()
        except Exception:
            log.debug("acp.connection_close_failed", exc_info=True)
