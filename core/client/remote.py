"""`AgentAccess` over A2A: each named agent reached through the official SDK client."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Sequence
from typing import Any

from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
)
from google.protobuf.json_format import MessageToDict

from core.client import views
from core.client.access import AgentInfo, ClientError, Outgoing, answered_by_sending
from core.client.changes import combined
from core.client.connection import AgentRef, Connection, translated
from core.client.views import Changes, TaskView, Update

# The instance id a daemon puts into the environment of every agent it runs (the daemon's
# `core.backend.procfs.MARKER_VARIABLE`): a message sent from there says so in its metadata,
# and that daemon refuses it (the loop guard, core/api/origin.py).
ORIGIN_VARIABLE = "A2A_WRAPPER_INSTANCE"


class RemoteAgents:
    """The agents of `refs`, by name; each connection opens on first use and stays open until
    `aclose()`. Implements `core.client.access.AgentAccess`."""

    def __init__(self, refs: Sequence[AgentRef]) -> None:
        self._refs = {ref.name: ref for ref in refs}
        if len(self._refs) != len(refs):
            raise ClientError("two agents have the same name; give each its own")
        self._open: dict[str, Connection] = {}

    async def __aenter__(self) -> RemoteAgents:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        opened, self._open = self._open, {}
        for connection in opened.values():
            await connection.aclose()

    @property
    def names(self) -> list[str]:
        return list(self._refs)

    async def connection(self, agent: str) -> Connection:
        if agent not in self._refs:
            known = ", ".join(self._refs) or "none"
            raise ClientError(f"no agent named {agent!r} (known: {known})")
        if agent not in self._open:
            self._open[agent] = await Connection.open(self._refs[agent])
        return self._open[agent]

    # ----- AgentAccess -------------------------------------------------------------------

    async def agents(self) -> list[AgentInfo]:
        found = []
        for name, ref in self._refs.items():
            try:
                found.append((await self.connection(name)).info())
            except ClientError as exc:
                found.append(AgentInfo(name=name, url=ref.url, description=f"unreachable: {exc}"))
        return found

    async def card(self, agent: str) -> dict[str, Any]:
        card: dict[str, Any] = MessageToDict((await self.connection(agent)).card)
        return card

    async def send(self, agent: str, message: Outgoing) -> AsyncIterator[Update | TaskView]:
        connection = await self.connection(agent)
        request = SendMessageRequest(message=_message(message))
        if message.cumulative:
            request.metadata.update({"a2aWrapper": {"changes": "cumulative"}})
        if not message.wait:
            request.configuration.CopyFrom(SendMessageConfiguration(return_immediately=True))
        async for item in self._follow(connection, request, streaming=message.wait):
            yield item

    async def answer(
        self, agent: str, task_id: str, reply: str
    ) -> AsyncIterator[Update | TaskView]:
        async for item in answered_by_sending(self, agent, task_id, reply):
            yield item

    async def watch(self, agent: str, task_id: str) -> AsyncIterator[Update | TaskView]:
        connection = await self.connection(agent)
        task = await self.get_task(agent, task_id)
        if task.terminal or task.waiting:
            yield task
            return
        async with connection.client() as client:
            with translated(f"cannot follow task {task_id}"):
                stream = client.subscribe(
                    SubscribeToTaskRequest(id=task_id), context=connection.call_context()
                )
                async for event in stream:
                    for update in views.updates_of(event):
                        yield update
        yield await self.get_task(agent, task_id)

    async def get_task(self, agent: str, task_id: str) -> TaskView:
        return views.view(await self._task(agent, task_id))

    async def list_tasks(
        self, agent: str, context_id: str | None = None, state: str | None = None
    ) -> list[TaskView]:
        return [views.view(t) for t in await self._tasks(agent, context_id, state)]

    async def cancel(self, agent: str, task_id: str) -> TaskView:
        connection = await self.connection(agent)
        async with connection.client(streaming=False) as client:
            with translated(f"cannot cancel task {task_id}"):
                task = await client.cancel_task(
                    CancelTaskRequest(id=task_id), context=connection.call_context()
                )
        return views.view(task)

    async def changes(self, agent: str, task_id: str, *, cumulative: bool) -> Changes | None:
        task = await self._task(agent, task_id)
        own = views.changes_of(task.artifacts)
        if not cumulative or (own is not None and own.scope == "cumulative"):
            return own
        # Composed from the context's turns, oldest first, up to this task (changes.py says
        # what that covers).
        earlier = await self._tasks(agent, task.context_id, None)
        return combined(task, earlier)

    async def transcript(self, agent: str, task_id: str) -> str:
        return views.transcript_of(await self._task(agent, task_id))

    # ----- helpers -------------------------------------------------------------------------

    async def _task(self, agent: str, task_id: str) -> Task:
        return await self._fetch(await self.connection(agent), task_id)

    async def _tasks(self, agent: str, context_id: str | None, state: str | None) -> list[Task]:
        connection = await self.connection(agent)
        if connection.interface.protocol_version.startswith("0."):
            raise ClientError(
                f"the agent {agent} speaks A2A {connection.interface.protocol_version}, "
                "which has no way to list tasks (ListTasks is new in v1.0)"
            )
        request = ListTasksRequest(context_id=context_id or "", include_artifacts=True)
        if state:
            request.status = views.state_value(state)  # type: ignore[assignment]
        found: list[Task] = []
        async with connection.client(streaming=False) as client:
            with translated("cannot list the tasks"):
                while True:
                    page = await client.list_tasks(request, context=connection.call_context())
                    found.extend(page.tasks)
                    if not page.next_page_token:
                        break
                    request.page_token = page.next_page_token
        return found

    async def _follow(
        self, connection: Connection, request: SendMessageRequest, *, streaming: bool
    ) -> AsyncIterator[Update | TaskView]:
        last: Task | None = None
        reply: Message | None = None
        task_id = ""
        async with connection.client(streaming=streaming) as client:
            with translated("the message was not delivered"):
                stream = client.send_message(request, context=connection.call_context())
                async for event in stream:
                    last, reply = _track(event, last, reply)
                    for update in views.updates_of(event):
                        task_id = task_id or update.task_id
                        yield update
        if reply is not None:
            yield views.message_view(reply)
        elif last is not None and request.configuration.return_immediately:
            yield views.view(last)
        elif task_id or last is not None:
            # The stream's events carry pieces; the task itself has the whole answer.
            yield views.view(await self._fetch(connection, task_id or (last.id if last else "")))
        else:
            raise ClientError("the agent answered with neither a task nor a message")

    async def _fetch(self, connection: Connection, task_id: str) -> Task:
        async with connection.client(streaming=False) as client:
            with translated(f"cannot read task {task_id}"):
                return await client.get_task(
                    GetTaskRequest(id=task_id), context=connection.call_context()
                )


def _track(
    event: StreamResponse, last: Task | None, reply: Message | None
) -> tuple[Task | None, Message | None]:
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task, reply
    if kind == "message":
        return last, event.message
    if kind == "status_update" and last is not None:
        last.status.CopyFrom(event.status_update.status)
    return last, reply


def _message(outgoing: Outgoing) -> Message:
    message = Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        context_id=outgoing.context_id or "",
        task_id=outgoing.task_id or "",
        parts=[Part(text=outgoing.text)] if outgoing.text else [],
    )
    for attachment in outgoing.attachments:
        message.parts.append(
            Part(raw=attachment.data, filename=attachment.name, media_type=attachment.media_type)
        )
    origin = os.environ.get(ORIGIN_VARIABLE)
    if origin:
        message.metadata.update({"a2aWrapper": {"origin": origin}})
    return message
