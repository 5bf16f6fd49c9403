"""The daemon as an ACP client: what the agent may call back (`session/update`,
`session/request_permission`, `fs/*`, `terminal/*`).

Updates and permission requests are routed by session id to the turn running in that
session (`ActiveTurn`); an update for a session without a running turn (the history an agent
replays during `session/load`) is dropped. Files and terminals are confined to the working
directory: a path that resolves outside it (symlinks included) is refused.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import structlog
from acp import RequestError
from acp.schema import (
    CreateElicitationResponse,
    CreateTerminalResponse,
    DeclineElicitationResponse,
    ElicitationMode,
    EnvVariable,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)
from anyio.streams.memory import MemoryObjectSendStream

from core.backend import ApprovalAnswer, ApprovalRequest
from wrappers.acp import approvals
from wrappers.acp.terminals import Terminals

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Denied:
    """The caller denied a permission with words for the agent (sent after the prompt)."""

    message: str


@dataclass(eq=False)
class ActiveTurn:
    """One turn running in one session: where its updates go, and how it asks."""

    session_id: str
    task_id: str
    ask: bool
    send: MemoryObjectSendStream[Any]
    always: set[tuple[str, str]]
    cancelled: anyio.Event = field(default_factory=anyio.Event)
    denials: list[str] = field(default_factory=list)


class DaemonClient:
    """The `acp.Client` of one agent process."""

    def __init__(
        self, working_directory: Path, approve_kinds: Collection[str], terminals: Terminals
    ) -> None:
        self._root = working_directory.resolve()
        self._approve_kinds = frozenset(approve_kinds)
        self.terminals = terminals
        self.active: dict[str, ActiveTurn] = {}
        # A session opened in a context's workspace works there, not in the working directory.
        self.roots: dict[str, Path] = {}

    # ----- session/update and session/request_permission ---------------------------------------

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        turn = self.active.get(session_id)
        if turn is not None and not turn.cancelled.is_set():
            await turn.send.send(update)

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        turn = self.active.get(session_id)
        if turn is None or turn.cancelled.is_set():
            return approvals.cancelled()
        if approvals.decided_by_policy(tool_call, self._approve_kinds, turn.always):
            return approvals.answer(options, "approve")
        if not turn.ask:
            log.info("acp.permission_denied_by_policy", kind=tool_call.kind, title=tool_call.title)
            return approvals.answer(options, "deny")
        request = approvals.approval_request(tool_call, options)
        await turn.send.send(request)
        reply = await _answer_or_cancel(request, turn)
        if reply is None:
            return approvals.cancelled()
        if reply.decision == "approve_always":
            turn.always.add(approvals.tool_key(tool_call))
        if reply.decision == "deny" and reply.message:
            turn.denials.append(reply.message)
        return approvals.answer(options, reply.decision)

    # ----- fs/* --------------------------------------------------------------------------------

    def confined(self, path: str, session_id: str | None = None) -> Path:
        """`path` (absolute, or relative to the session's directory) when it lies inside that
        directory (its workspace, else the working directory) once resolved; a RequestError
        otherwise."""
        root = self.roots.get(session_id, self._root) if session_id else self._root
        candidate = Path(path)
        resolved = (candidate if candidate.is_absolute() else root / candidate).resolve()
        if resolved != root and not resolved.is_relative_to(root):
            log.warning("acp.path_refused", path=path)
            raise RequestError.invalid_params(
                {"path": path, "reason": "outside the working directory"}
            )
        return resolved

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        target = anyio.Path(self.confined(path, session_id))
        try:
            text = await target.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError as exc:
            raise RequestError.resource_not_found(path) from exc
        if line is not None or limit is not None:
            lines = text.splitlines(keepends=True)
            start = max((line or 1) - 1, 0)
            text = "".join(lines[start : None if limit is None else start + limit])
        return ReadTextFileResponse(content=text)

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        target = anyio.Path(self.confined(path, session_id))
        await target.parent.mkdir(parents=True, exist_ok=True)
        await target.write_text(content, encoding="utf-8")
        return WriteTextFileResponse()

    # ----- terminal/* --------------------------------------------------------------------------

    async def create_terminal(  # noqa: PLR0917 - acp.Client's own signature
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        where = self.confined(cwd or ".", session_id)
        variables = {v.name: v.value for v in env or []}
        try:
            terminal_id = await self.terminals.create(
                session_id,
                [command, *(args or [])],
                cwd=where,
                env=variables,
                limit=output_byte_limit,
            )
        except OSError as exc:
            raise RequestError.invalid_params({"command": command, "reason": exc.strerror}) from exc
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self._terminal(terminal_id)
        status = None
        if terminal.exited.is_set():
            status = TerminalExitStatus(exit_code=terminal.exit_code, signal=terminal.signal)
        return TerminalOutputResponse(
            output=terminal.text, truncated=terminal.truncated, exit_status=status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self._terminal(terminal_id)
        await terminal.exited.wait()
        return WaitForTerminalExitResponse(exit_code=terminal.exit_code, signal=terminal.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        self._terminal(terminal_id)
        await self.terminals.kill(terminal_id)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        await self.terminals.release(terminal_id)
        return ReleaseTerminalResponse()

    def _terminal(self, terminal_id: str) -> Any:
        try:
            return self.terminals.get(terminal_id)
        except KeyError as exc:
            raise RequestError.resource_not_found(terminal_id) from exc

    # ----- the rest of acp.Client --------------------------------------------------------------

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        # The daemon advertises no elicitation capability: an agent asking anyway is declined.
        return DeclineElicitationResponse(action="decline")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        return None

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(method)

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None

    def on_connect(self, conn: Any) -> None:
        return None


async def _answer_or_cancel(request: ApprovalRequest, turn: ActiveTurn) -> ApprovalAnswer | None:
    """The caller's answer, or None once the turn is cancelled (ACP: a cancelled turn's
    pending permission requests are answered `cancelled`)."""
    result: list[ApprovalAnswer] = []
    async with anyio.create_task_group() as tg:

        async def wait_answer() -> None:
            result.append(await request.reply.wait())
            tg.cancel_scope.cancel()

        async def wait_cancel() -> None:
            await turn.cancelled.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(wait_answer)
        tg.start_soon(wait_cancel)
    return result[0] if result else None
