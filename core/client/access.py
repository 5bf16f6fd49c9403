"""The agent access the MCP tools (and later the daemon's `/mcp`) are written against.

`AgentAccess` is what a face for people or models needs of the agents it fronts: list them,
read a card, send a message and follow it, read, answer and cancel a task, take its changes,
read its transcript. `remote.RemoteAgents` implements it over A2A for any agent; a daemon-local
implementation over the protocol-neutral operations can plug into the same tools.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from core.client.views import Changes, TaskView, Update


class ClientError(Exception):
    """A failure to show the user as it is: the agent is unreachable, the task is unknown, the
    agent refused the request. `str()` is written for the person (or model) calling."""


@dataclass(frozen=True)
class Attachment:
    """A file sent with a message: inline bytes with a name and a media type (a patch is an
    attachment whose media type is `text/x-diff`)."""

    name: str
    data: bytes
    media_type: str


@dataclass(frozen=True)
class Outgoing:
    """A message to send. `context_id` / `task_id` continue a conversation or a task;
    `cumulative` asks our daemon for the cumulative diff since the workspace's base;
    `wait`: False returns as soon as the agent has the task."""

    text: str
    context_id: str | None = None
    task_id: str | None = None
    attachments: tuple[Attachment, ...] = ()
    cumulative: bool = False
    wait: bool = True


@dataclass(frozen=True)
class AgentInfo:
    name: str
    url: str
    description: str = ""
    skills: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    protocol: str = ""
    binding: str = ""
    streaming: bool = False
    # The card's conversation-control record (core/client/control.py); None: the card
    # declares no such extension (an agent that is not ours, or an older daemon).
    control: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "capabilities": self.control,
            "name": self.name,
            "url": self.url,
            "description": self.description,
            "skills": list(self.skills),
            "protocol": self.protocol,
            "binding": self.binding,
            "streaming": self.streaming,
        }


class AgentAccess(Protocol):
    """Every method raises `ClientError` (with a message for the caller) when the agent cannot
    be reached or refuses; an unknown agent name is a `ClientError` too.

    `send`, `answer` and `watch` yield the updates of the task as they happen (progress, pieces
    of the answer, state changes) and end with one `TaskView`: the task as it stands when the
    stream ended (terminal, waiting for input, or, with `wait=False`, just accepted). Closing
    the iterator early stops following; it never cancels the task."""

    async def agents(self) -> list[AgentInfo]: ...

    async def card(self, agent: str) -> dict[str, Any]: ...

    def send(self, agent: str, message: Outgoing) -> AsyncIterator[Update | TaskView]: ...

    def answer(self, agent: str, task_id: str, reply: str) -> AsyncIterator[Update | TaskView]: ...

    def watch(self, agent: str, task_id: str) -> AsyncIterator[Update | TaskView]: ...

    async def get_task(self, agent: str, task_id: str) -> TaskView: ...

    async def list_tasks(
        self, agent: str, context_id: str | None = None, state: str | None = None
    ) -> list[TaskView]: ...

    async def cancel(self, agent: str, task_id: str) -> TaskView: ...

    async def changes(self, agent: str, task_id: str, *, cumulative: bool) -> Changes | None: ...

    async def transcript(self, agent: str, task_id: str) -> str: ...


async def answered_by_sending(
    access: AgentAccess, agent: str, task_id: str, reply: str
) -> AsyncIterator[Update | TaskView]:
    """`answer` as every A2A agent takes it: `reply` sent as the task's next message, once the
    task is seen waiting for one."""
    task = await access.get_task(agent, task_id)
    if not task.waiting:
        raise ClientError(f"task {task_id} is {task.state}, not waiting for an answer")
    outgoing = Outgoing(reply, context_id=task.context_id, task_id=task_id)
    async for item in access.send(agent, outgoing):
        yield item
