"""One `codex app-server` process, spoken to in JSON-RPC over stdio.

The protocol is the one the openai-codex SDK speaks (its generated models describe it); this
client is async, owns the process and its reader in the backend's task group, and routes
notifications to whoever listens to a thread. Lifecycle:

- `AppServer.launch()` starts the process in its own process group and performs the
  `initialize` handshake;
- `request()` sends a request and waits for its response (`AppServerError` on an error
  response, `AppServerExitedError` when the process is gone);
- `listen(thread_id)` yields the notifications of one thread, in order, until the process exits
  (then the stream ends); with `asks=True` the thread's approval requests come in the same
  stream, in order (a `Notification` with a `request_id`), and the listener answers each with
  `respond()`;
- `turn_completed(turn_id)` waits for a turn's `turn/completed`, whoever reads the thread;
- the reader answers every other request of the server (approvals nobody listens for,
  questions, elicitations) with a refusal: a daemon has no one to ask;
- `aclose()` stops the process (close stdin, then terminate and kill its group, then close its
  pipes).
"""

from __future__ import annotations

import itertools
import json
import math
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import anyio
import structlog
from anyio.abc import Process, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from core.backend.process import spawn, stop
from wrappers.codex.approvals import ASKED_METHODS
from wrappers.codex.options import Launch

log = structlog.get_logger(__name__)

MAX_LINE = 64 * 1024 * 1024
STDERR_TAIL = 40
STDERR_LINE = 8192
HANDSHAKE_TIMEOUT = 30.0
FINISHED_TURNS_KEPT = 1024
CLIENT_INFO = {"name": "a2a_wrapper", "title": "a2a-wrapper", "version": "0.1.0"}

Tap = Callable[[str, dict[str, Any]], None]


class AppServerError(Exception):
    """The app-server answered a request with a JSON-RPC error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} (code {code})")
        self.method = method
        self.code = code
        self.message = message


class AppServerExitedError(Exception):
    """The app-server process is gone."""


@dataclass(frozen=True)
class Notification:
    """A notification, or with `request_id` a request of the server awaiting `respond()`."""

    method: str
    params: dict[str, Any]
    request_id: int | str | None = None


@dataclass
class _Pending:
    method: str
    done: anyio.Event = field(default_factory=anyio.Event)
    result: dict[str, Any] | None = None
    error: Exception | None = None


# The server's requests and the answer a headless daemon gives: decline, never approve.
REFUSALS: dict[str, dict[str, Any]] = {
    "item/commandExecution/requestApproval": {"decision": "decline"},
    "item/fileChange/requestApproval": {"decision": "decline"},
    "item/permissions/requestApproval": {"permissions": {}},
    "item/tool/requestUserInput": {"answers": {}},
    "mcpServer/elicitation/request": {"action": "decline"},
    "item/tool/call": {"contentItems": [], "success": False},
    "execCommandApproval": {"decision": "denied"},
    "applyPatchApproval": {"decision": "denied"},
}


def thread_of(params: Mapping[str, Any]) -> str | None:
    """The thread a notification belongs to (`threadId`, or the `thread` it describes)."""
    thread_id = params.get("threadId")
    if isinstance(thread_id, str):
        return thread_id
    thread = params.get("thread")
    if isinstance(thread, dict) and isinstance(thread.get("id"), str):
        return str(thread["id"])
    return None


class AppServer:
    def __init__(self, process: Process, *, tap: Tap | None = None) -> None:
        self._process = process
        self._tap = tap
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._listeners: dict[str, list[MemoryObjectSendStream[Notification]]] = {}
        self._askers: dict[str, MemoryObjectSendStream[Notification]] = {}
        self._finished: OrderedDict[str, None] = OrderedDict()
        self._turn_waiters: dict[str, anyio.Event] = {}
        self._commands: dict[str, set[str]] = {}
        self._commands_idle: dict[str, anyio.Event] = {}
        self._write_lock = anyio.Lock()
        self._stderr: deque[str] = deque(maxlen=STDERR_TAIL)
        self._exited = anyio.Event()
        self.exit_reason = ""
        self.version = ""

    @classmethod
    async def launch(cls, tg: TaskGroup, how: Launch, *, tap: Tap | None = None) -> AppServer:
        """Start the process, its reader tasks in `tg`, and the handshake."""
        process = await spawn(how.argv, cwd=how.cwd, env=how.env)
        server = cls(process, tap=tap)
        tg.start_soon(server._drain_stderr)
        tg.start_soon(server._read)
        try:
            with anyio.fail_after(HANDSHAKE_TIMEOUT):
                info = await server.request(
                    "initialize",
                    {
                        "clientInfo": CLIENT_INFO,
                        "capabilities": {"experimentalApi": True},
                    },
                )
            await server._write({"method": "initialized"})
        except BaseException:
            await server.aclose()
            raise
        server.version = _version_of(str(info.get("userAgent", "")))
        return server

    @property
    def pid(self) -> int:
        return self._process.pid

    @property
    def running(self) -> bool:
        return not self._exited.is_set()

    async def wait_exited(self) -> None:
        await self._exited.wait()

    def stderr_tail(self) -> str:
        return "\n".join(self._stderr)

    # ----- requests ------------------------------------------------------------------------

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        if self._exited.is_set():
            raise AppServerExitedError(self.exit_reason)
        request_id = next(self._ids)
        pending = _Pending(method)
        self._pending[request_id] = pending
        try:
            message: dict[str, Any] = {"id": request_id, "method": method}
            if params is not None:
                message["params"] = dict(params)
            await self._write(message)
            await pending.done.wait()
        finally:
            self._pending.pop(request_id, None)
        if pending.error is not None:
            raise pending.error
        return pending.result or {}

    async def _write(self, message: Mapping[str, Any]) -> None:
        stdin = self._process.stdin
        if stdin is None:
            raise AppServerExitedError("no stdin")
        data = (json.dumps(message) + "\n").encode()
        async with self._write_lock:
            try:
                await stdin.send(data)
            except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError) as exc:
                raise AppServerExitedError(self.exit_reason or "stdin closed") from exc

    # ----- notifications -------------------------------------------------------------------

    @contextmanager
    def listen(
        self, thread_id: str, *, asks: bool = False
    ) -> Iterator[MemoryObjectReceiveStream[Notification]]:
        """Every notification of `thread_id` from now on, until the process exits. With `asks`,
        the thread's approval requests (`ASKED_METHODS`) too; the listener must `respond()` to
        each."""
        send, receive = anyio.create_memory_object_stream[Notification](math.inf)
        if self._exited.is_set():
            send.close()
        else:
            self._listeners.setdefault(thread_id, []).append(send)
            if asks:
                self._askers[thread_id] = send
        try:
            yield receive
        finally:
            if self._askers.get(thread_id) is send:
                del self._askers[thread_id]
            listeners = self._listeners.get(thread_id, [])
            if send in listeners:
                listeners.remove(send)
            if not listeners:
                self._listeners.pop(thread_id, None)
            send.close()
            receive.close()

    async def turn_completed(self, turn_id: str) -> None:
        """Return once `turn_id` has completed (at once if it already has), or the server is
        gone."""
        if turn_id in self._finished or self._exited.is_set():
            return
        waiter = self._turn_waiters.setdefault(turn_id, anyio.Event())
        await waiter.wait()

    async def commands_finished(self, thread_id: str) -> None:
        """Return once no command the thread started is still running (or the server is gone).
        Codex reports a command's end (`item/completed`) even after its turn ended."""
        if not self._commands.get(thread_id) or self._exited.is_set():
            return
        idle = self._commands_idle.setdefault(thread_id, anyio.Event())
        await idle.wait()

    async def respond(self, request_id: int | str, result: Mapping[str, Any]) -> None:
        """Answer a request of the server (one a listener received); nothing if it is gone."""
        with suppress(AppServerExitedError):
            await self._write({"id": request_id, "result": dict(result)})

    # ----- the reader ----------------------------------------------------------------------

    async def _read(self) -> None:
        stdout = self._process.stdout
        reason = "stdout closed"
        try:
            if stdout is None:
                return
            lines = BufferedByteReceiveStream(stdout)
            while True:
                line = await lines.receive_until(b"\n", MAX_LINE)
                try:
                    message = json.loads(line)
                except ValueError:
                    message = None
                if isinstance(message, dict):
                    await self._dispatch(message)
                elif line.strip():
                    log.warning(
                        "codex.app_server.not_json", line=line[:200].decode(errors="replace")
                    )
        except (
            anyio.EndOfStream,
            anyio.IncompleteRead,
            anyio.ClosedResourceError,
            anyio.BrokenResourceError,
        ):
            pass
        except Exception as exc:
            # A protocol error makes the process useless; it is stopped and replaced.
            reason = f"unreadable output: {type(exc).__name__}: {exc}"
            log.exception("codex.app_server.read_failed")
        finally:
            with anyio.CancelScope(shield=True):
                await self._closed(reason)

    async def _closed(self, reason: str) -> None:
        """The process is gone (or useless): fail everything that waits on it."""
        code: int | None = None
        with anyio.move_on_after(5):
            code = await self._process.wait()
        if code is None:
            code = await stop(self._process, grace=0)
        tail = self.stderr_tail().strip().splitlines()
        detail = f"; last output: {tail[-1][:300]}" if tail else ""
        self.exit_reason = f"codex app-server exited with code {code} ({reason}){detail}"
        self._exited.set()
        for pending in self._pending.values():
            pending.error = AppServerExitedError(self.exit_reason)
            pending.done.set()
        for listeners in self._listeners.values():
            for send in listeners:
                send.close()
        self._listeners.clear()
        self._askers.clear()
        for waiter in [*self._turn_waiters.values(), *self._commands_idle.values()]:
            waiter.set()

    async def _dispatch(self, message: dict[str, Any]) -> None:
        method = message.get("method")
        if self._tap is not None:
            self._tap("<", message)
        if isinstance(method, str) and "id" in message:
            params = message.get("params")
            request = Notification(
                method, params if isinstance(params, dict) else {}, request_id=message["id"]
            )
            if not self._forward(request):
                await self._answer(message["id"], method)
        elif isinstance(method, str):
            params = message.get("params")
            self._notify(Notification(method, params if isinstance(params, dict) else {}))
        elif isinstance(message.get("id"), int):
            self._resolve(message)

    def _resolve(self, message: dict[str, Any]) -> None:
        pending = self._pending.get(message["id"])
        if pending is None:
            return  # its requester was cancelled
        error = message.get("error")
        if isinstance(error, dict):
            pending.error = AppServerError(
                pending.method, int(error.get("code", 0)), str(error.get("message", ""))
            )
        else:
            result = message.get("result")
            pending.result = result if isinstance(result, dict) else {}
        pending.done.set()

    def _notify(self, note: Notification) -> None:
        if note.method == "turn/completed":
            turn = note.params.get("turn")
            turn_id = turn.get("id") if isinstance(turn, dict) else None
            if isinstance(turn_id, str):
                self._finished[turn_id] = None
                while len(self._finished) > FINISHED_TURNS_KEPT:
                    self._finished.popitem(last=False)
                waiter = self._turn_waiters.pop(turn_id, None)
                if waiter is not None:
                    waiter.set()
        thread_id = thread_of(note.params)
        if thread_id is not None:
            self._track_commands(thread_id, note)
        for send in self._listeners.get(thread_id or "", []):
            with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                send.send_nowait(note)

    def _forward(self, request: Notification) -> bool:
        """Hand an approval request to the listener of its thread that answers them, if any."""
        if request.method not in ASKED_METHODS:
            return False
        asker = self._askers.get(thread_of(request.params) or "")
        if asker is None:
            return False
        try:
            asker.send_nowait(request)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def _track_commands(self, thread_id: str, note: Notification) -> None:
        item = note.params.get("item")
        if not isinstance(item, dict) or item.get("type") != "commandExecution":
            return
        item_id = str(item.get("id"))
        running = self._commands.setdefault(thread_id, set())
        if note.method == "item/started":
            running.add(item_id)
        elif note.method == "item/completed":
            running.discard(item_id)
        if not running:
            del self._commands[thread_id]
            idle = self._commands_idle.pop(thread_id, None)
            if idle is not None:
                idle.set()

    async def _answer(self, request_id: Any, method: str) -> None:
        refusal = REFUSALS.get(method)
        log.info("codex.app_server.request_refused", method=method)
        if refusal is not None:
            reply: dict[str, Any] = {"id": request_id, "result": refusal}
        else:
            reply = {
                "id": request_id,
                "error": {"code": -32601, "message": f"a2a-wrapper does not handle {method}"},
            }
        with suppress(AppServerExitedError):
            await self._write(reply)

    async def _drain_stderr(self) -> None:
        """Keep reading stderr (a full pipe would block the app-server), keeping its tail for
        error messages."""
        stderr = self._process.stderr
        if stderr is None:
            return
        pending = b""
        try:
            while True:
                pending += await stderr.receive()
                *lines, pending = pending.split(b"\n")
                if len(pending) > STDERR_LINE:
                    lines, pending = [*lines, pending], b""
                for line in lines:
                    self._stderr_line(line)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._stderr_line(pending)
        except Exception:
            # Never let the stderr drain take the backend's task group down with it.
            log.exception("codex.app_server.stderr_failed")

    def _stderr_line(self, line: bytes) -> None:
        text = line[:STDERR_LINE].decode(errors="replace").rstrip()
        if text:
            self._stderr.append(text)
            log.debug("codex.app_server.stderr", line=text[:500])

    # ----- shutdown ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Stop the process and its group; returns once it is reaped."""
        await stop(self._process)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await self._exited.wait()


def _version_of(user_agent: str) -> str:
    """`a2a_wrapper/0.163.0 (Debian 12; x86_64) ...` -> `0.163.0`."""
    head = user_agent.split(" ", 1)[0]
    return head.split("/", 1)[1] if "/" in head else ""
