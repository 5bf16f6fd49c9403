"""The a2a-sdk's side of the crew's client: the only module, with client.py, that sees the
SDK's protobuf types. Tasks and stream events become plain data (`RemoteTask`, `Update`) with
typed states (`RunState`); the SDK's and httpx's exceptions become `AgentError`s.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
from a2a.client.card_resolver import parse_agent_card
from a2a.client.errors import A2AClientError
from a2a.types import AgentCard, AgentInterface, Part, StreamResponse, Task, TaskState
from a2a.utils.errors import A2AError
from google.protobuf.json_format import MessageToDict, ParseError
from packaging.version import InvalidVersion, Version

from examples.crew.ledger.states import INTERRUPTED, TERMINAL, RunState
from examples.crew.plan.changes import is_patch_media
from examples.crew.plan.output import ArtifactView, PartView
from examples.crew.plan.plan import AgentSpec

WRAPPER_KEY = "a2aWrapper"  # where a2a-wrapper daemons put backend, session, usage, errors
BINDINGS = ("JSONRPC", "HTTP+JSON")
T = TypeVar("T")
HTTP_TOO_MANY_REQUESTS = 429

_STATES = {
    TaskState.TASK_STATE_SUBMITTED: RunState.SUBMITTED,
    TaskState.TASK_STATE_WORKING: RunState.WORKING,
    TaskState.TASK_STATE_COMPLETED: RunState.COMPLETED,
    TaskState.TASK_STATE_FAILED: RunState.FAILED,
    TaskState.TASK_STATE_CANCELED: RunState.CANCELED,
    TaskState.TASK_STATE_INPUT_REQUIRED: RunState.INPUT_REQUIRED,
    TaskState.TASK_STATE_REJECTED: RunState.REJECTED,
    TaskState.TASK_STATE_AUTH_REQUIRED: RunState.AUTH_REQUIRED,
}


class AgentError(Exception):
    """The agent answered, with an error (the message says which)."""


class AgentBusyError(AgentError):
    """The agent's server answered HTTP 429: it takes no more work for now."""


class AgentUnreachableError(AgentError):
    """The agent could not be reached (connection refused, timeout, bad card)."""


@dataclass(frozen=True)
class RemoteTask:
    """A task as the agent reported it."""

    id: str
    context_id: str
    state: RunState
    note: str = ""
    artifacts: tuple[ArtifactView, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def wrapper(self) -> Mapping[str, Any]:
        section = self.metadata.get(WRAPPER_KEY)
        return section if isinstance(section, Mapping) else {}

    @property
    def backend(self) -> str | None:
        backend = self.wrapper.get("backend")
        return backend if isinstance(backend, str) else None

    @property
    def usage(self) -> dict[str, Any]:
        usage = self.wrapper.get("usage")
        return dict(usage) if isinstance(usage, Mapping) else {}

    @property
    def error_kind(self) -> str | None:
        """`a2aWrapper.error.kind`: what an a2a-wrapper daemon says a failure was (`quota`,
        `rateLimit`, `auth`, `upstream`, ...), when it says."""
        error = self.wrapper.get("error")
        kind = error.get("kind") if isinstance(error, Mapping) else None
        return kind if isinstance(kind, str) else None


@dataclass(frozen=True)
class Update:
    """One thing that happened to a task: a state (None for output only) and a note."""

    task_id: str
    context_id: str
    state: RunState | None
    note: str = ""
    reply: RemoteTask | None = None
    """Set when the agent answered with a direct Message instead of a task."""


def text_of(parts: Sequence[Part]) -> str:
    return "\n".join(p.text for p in parts if p.WhichOneof("content") == "text")


def _part(part: Part) -> PartView:
    kind = part.WhichOneof("content")
    media = part.media_type or None
    if kind == "text":
        return PartView(text=part.text, media_type=media)
    if kind == "data":
        return PartView(data=MessageToDict(part.data), media_type=media)
    if kind == "url":
        return PartView(url=part.url, filename=part.filename or None, media_type=media)
    # A patch (the `changes` artifact's file part) is kept as text: later steps apply it.
    content = part.raw.decode("utf-8", "replace") if is_patch_media(media) else None
    return PartView(
        filename=part.filename or None, media_type=media, size=len(part.raw), content=content
    )


def to_remote(task: Task) -> RemoteTask:
    message = task.status.message if task.status.HasField("message") else None
    return RemoteTask(
        id=task.id,
        context_id=task.context_id,
        state=_STATES.get(task.status.state, RunState.UNKNOWN),
        note=text_of(message.parts) if message is not None else "",
        artifacts=tuple(
            ArtifactView(a.artifact_id, a.name, tuple(_part(p) for p in a.parts))
            for a in task.artifacts
        ),
        metadata=MessageToDict(task.metadata) if task.HasField("metadata") else {},
    )


def to_update(event: StreamResponse) -> Update | None:
    kind = event.WhichOneof("payload")
    if kind == "task":
        task = to_remote(event.task)
        return Update(task.id, task.context_id, task.state, task.note)
    if kind == "status_update":
        status = event.status_update.status
        note = text_of(status.message.parts) if status.HasField("message") else ""
        return Update(
            event.status_update.task_id,
            event.status_update.context_id,
            _STATES.get(status.state, RunState.UNKNOWN),
            note,
        )
    if kind == "message":
        message = event.message
        view = ArtifactView("reply", "reply", tuple(_part(p) for p in message.parts))
        reply = RemoteTask("", message.context_id, RunState.COMPLETED, artifacts=(view,))
        return Update("", message.context_id, RunState.COMPLETED, reply=reply)
    return None  # artifact updates: the final task carries the artifacts


def major_minor(version: str) -> str | None:
    try:
        parsed = Version(version)
    except InvalidVersion:
        return None
    return f"{parsed.major}.{parsed.minor}"


def choose_interface(card: AgentCard, spec: AgentSpec) -> AgentInterface:
    """v1.0 before v0.3, then JSON-RPC before REST, within what the plan allows."""
    if spec.follow == "stream" and not card.capabilities.streaming:
        raise AgentError("the plan asks follow=stream, but the card has no streaming")
    candidates = [
        i
        for i in card.supported_interfaces
        if i.protocol_binding in BINDINGS
        and major_minor(i.protocol_version) in ("1.0", "0.3")
        and spec.protocol in ("auto", major_minor(i.protocol_version))
        and spec.binding in ("auto", i.protocol_binding)
    ]
    if not candidates:
        offered = ", ".join(
            f"{i.protocol_binding} {i.protocol_version}" for i in card.supported_interfaces
        )
        raise AgentError(
            f"no usable interface (offered: {offered or 'none'}; this crew speaks JSONRPC or "
            f"HTTP+JSON, v1.0 or v0.3; the plan asks protocol={spec.protocol}, "
            f"binding={spec.binding})"
        )

    def rank(i: AgentInterface) -> tuple[int, int]:
        return (
            0 if major_minor(i.protocol_version) == "1.0" else 1,
            BINDINGS.index(i.protocol_binding),
        )

    return min(candidates, key=rank)


def settled(state: RunState | None) -> bool:
    return state in TERMINAL or state in INTERRUPTED


@asynccontextmanager
async def translated() -> AsyncIterator[None]:
    """Turn the SDK's and httpx's exceptions into AgentError (AgentUnreachableError,
    AgentBusyError for an HTTP 429)."""
    try:
        yield
    except (A2AClientError, httpx.HTTPError, OSError) as exc:
        if _status(exc) == HTTP_TOO_MANY_REQUESTS:
            raise AgentBusyError(f"HTTP 429: {exc}") from exc
        raise AgentUnreachableError(str(exc) or type(exc).__name__) from exc
    except A2AError as exc:
        raise AgentError(f"{type(exc).__name__}: {exc.message}") from exc
    except NotImplementedError as exc:
        raise AgentError(str(exc)) from exc


@asynccontextmanager
async def closing(events: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """Close an async generator as soon as its consumer is done with it (not at GC time), so
    an abandoned stream releases its HTTP connection at once."""
    try:
        yield events
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


async def read_card(http: httpx.AsyncClient, url: str) -> AgentCard:
    try:
        response = await http.get(url)
        response.raise_for_status()
        return parse_agent_card(response.json())
    except httpx.HTTPStatusError as exc:
        raise AgentUnreachableError(f"card: HTTP {exc.response.status_code}") from exc
    except httpx.HTTPError as exc:
        raise AgentUnreachableError(f"card unreachable: {exc!s} ({type(exc).__name__})") from exc
    except (ValueError, ParseError) as exc:
        raise AgentUnreachableError(f"card is not a valid agent card: {exc}") from exc


def _status(exc: BaseException) -> int | None:
    """The HTTP status behind an exception (the SDK wraps httpx's), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, httpx.HTTPStatusError):
            return seen.response.status_code
        seen = seen.__cause__
    return None
