"""`AgentAccess` over this daemon's own `Operations`, for one principal: what the MCP tools
(core/client/mcp_server.py) need, served by the daemon itself at `/mcp`.

The tools were written once against `core.client.access.AgentAccess`; `RemoteAgents` reaches
any agent over A2A, this reaches the daemon's own agent without a network hop. Requests are
built as v1 ProtoJSON and validated by the wire models, as a binding decodes them; results go
back to the SDK's types through the same ProtoJSON, so `core.client.views` reads them as it
reads a remote agent's.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import unquote

from a2a import types as sdk
from google.protobuf.json_format import ParseDict
from google.protobuf.message import Message as ProtoMessage
from pydantic import ValidationError

from core.api.card import CardProvider
from core.api.operations import Operations
from core.api.origin import stamped
from core.client import control, views
from core.client.access import AgentInfo, ClientError, Outgoing, answered_by_sending
from core.client.changes import combined
from core.client.views import Changes, TaskView, Update
from core.wire.base import WireModel
from core.wire.errors import DaemonError
from core.wire.models import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    SendMessageRequest,
)

LIST_PAGE = 100
P = TypeVar("P", bound=ProtoMessage)


class LocalAgents:
    """The daemon's one agent, named as its card names it, as `principal` sees it: only that
    principal's tasks (Operations scopes every call). Implements `AgentAccess`."""

    def __init__(
        self, ops: Operations, card: CardProvider, principal: str, *, own_agent: bool = False
    ) -> None:
        """`own_agent`: the caller is one of this daemon's own agents; its messages say so
        (and Operations refuses them: the loop guard)."""
        self._ops = ops
        self._card = card
        self._principal = principal
        self._own_agent = own_agent

    def _document(self) -> dict[str, Any]:
        return self._card.document_for(self._card.configured_base_url(), strict=False)

    def _check(self, agent: str) -> None:
        name = str(self._document().get("name", ""))
        # A resource URI carries the name percent-encoded ("Test%20agent").
        if agent != name and unquote(agent) != name:
            raise ClientError(f"no agent named {agent!r} here (this daemon's agent is {name!r})")

    async def agents(self) -> list[AgentInfo]:
        doc = self._document()
        interfaces = doc.get("supportedInterfaces") or [{}]
        return [
            AgentInfo(
                name=str(doc.get("name", "")),
                url=str(interfaces[0].get("url", self._card.configured_base_url())),
                description=str(doc.get("description", "")),
                skills=tuple(doc.get("skills") or ()),
                protocol=str(interfaces[0].get("protocolVersion", "1.0")),
                binding="local",
                streaming=True,
                control=control.record_of(doc),
            )
        ]

    async def card(self, agent: str) -> dict[str, Any]:
        self._check(agent)
        return self._document()

    async def send(self, agent: str, message: Outgoing) -> AsyncIterator[Update | TaskView]:
        self._check(agent)
        request = _request(message, own_agent=self._own_agent)
        if not message.wait:
            with _translated("the message was not delivered"):
                outcome = await self._ops.send_message(self._principal, request)
            yield _view(outcome)
            return
        task_id = ""
        with _translated("the message was not delivered"):
            stream = await self._ops.send_streaming_message(self._principal, request)
        try:
            with _translated("the message was not delivered"):
                async for event in stream:
                    proto = _sdk(event, sdk.StreamResponse())
                    if proto.WhichOneof("payload") == "message":
                        yield views.message_view(proto.message)
                        return
                    for update in views.updates_of(proto):
                        task_id = task_id or update.task_id
                        yield update
        finally:
            stream.close()
        if not task_id:
            raise ClientError("the agent answered with neither a task nor a message")
        yield await self.get_task(agent, task_id)

    async def answer(
        self, agent: str, task_id: str, reply: str
    ) -> AsyncIterator[Update | TaskView]:
        async for item in answered_by_sending(self, agent, task_id, reply):
            yield item

    async def watch(self, agent: str, task_id: str) -> AsyncIterator[Update | TaskView]:
        task = await self.get_task(agent, task_id)
        if task.terminal or task.waiting:
            yield task
            return
        with _translated(f"cannot follow task {task_id}"):
            stream = await self._ops.subscribe_to_task(self._principal, task_id)
        try:
            with _translated(f"cannot follow task {task_id}"):
                async for event in stream:
                    for update in views.updates_of(_sdk(event, sdk.StreamResponse())):
                        yield update
        finally:
            stream.close()
        yield await self.get_task(agent, task_id)

    async def get_task(self, agent: str, task_id: str) -> TaskView:
        self._check(agent)
        return views.view(await self._task(task_id))

    async def list_tasks(
        self, agent: str, context_id: str | None = None, state: str | None = None
    ) -> list[TaskView]:
        self._check(agent)
        return [views.view(t) for t in await self._tasks(context_id, state)]

    async def cancel(self, agent: str, task_id: str) -> TaskView:
        self._check(agent)
        with _translated(f"cannot cancel task {task_id}"):
            task = await self._ops.cancel_task(self._principal, CancelTaskRequest(id=task_id))
        return views.view(_sdk(task, sdk.Task()))

    async def changes(self, agent: str, task_id: str, *, cumulative: bool) -> Changes | None:
        self._check(agent)
        task = await self._task(task_id)
        own = views.changes_of(task.artifacts)
        if not cumulative or (own is not None and own.scope == "cumulative"):
            return own
        return combined(task, await self._tasks(task.context_id, None))

    async def transcript(self, agent: str, task_id: str) -> str:
        self._check(agent)
        return views.transcript_of(await self._task(task_id))

    async def _task(self, task_id: str) -> sdk.Task:
        with _translated(f"cannot read task {task_id}"):
            task = await self._ops.get_task(self._principal, GetTaskRequest(id=task_id))
        return _sdk(task, sdk.Task())

    async def _tasks(self, context_id: str | None, state: str | None) -> list[sdk.Task]:
        params: dict[str, Any] = {"includeArtifacts": True, "pageSize": LIST_PAGE}
        if context_id:
            params["contextId"] = context_id
        if state:
            params["status"] = sdk.TaskState.Name(views.state_value(state))
        found: list[sdk.Task] = []
        with _translated("cannot list the tasks"):
            while True:
                page = await self._ops.list_tasks(
                    self._principal, ListTasksRequest.model_validate(params)
                )
                found.extend(_sdk(t, sdk.Task()) for t in page.tasks)
                if not page.next_page_token:
                    return found
                params["pageToken"] = page.next_page_token


def _request(message: Outgoing, *, own_agent: bool) -> SendMessageRequest:
    parts: list[dict[str, Any]] = [{"text": message.text}] if message.text else []
    parts += [
        {
            "raw": base64.b64encode(a.data).decode(),
            "filename": a.name,
            "mediaType": a.media_type,
        }
        for a in message.attachments
    ]
    body: dict[str, Any] = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": parts}
    if message.context_id:
        body["contextId"] = message.context_id
    if message.task_id:
        body["taskId"] = message.task_id
    if own_agent:
        body["metadata"] = stamped({})
    params: dict[str, Any] = {"message": body}
    if message.cumulative:
        params["metadata"] = {"a2aWrapper": {"changes": "cumulative"}}
    if not message.wait:
        params["configuration"] = {"returnImmediately": True}
    try:
        return SendMessageRequest.model_validate(params)
    except ValidationError as exc:
        raise ClientError(f"the message is not valid: {exc.errors()[0]['msg']}") from exc


def _view(outcome: Any) -> TaskView:
    if isinstance(outcome, Message):
        return views.message_view(_sdk(outcome, sdk.Message()))
    return views.view(_sdk(outcome, sdk.Task()))


def _sdk(model: WireModel, into: P) -> P:
    """A wire model as the SDK's protobuf message (both are A2A v1 ProtoJSON)."""
    ParseDict(model.dump(), into, ignore_unknown_fields=True)
    return into


@contextmanager
def _translated(doing: str) -> Iterator[None]:
    """The daemon's refusals as the client's errors: its caller-safe message, in words."""
    try:
        yield
    except DaemonError as exc:
        raise ClientError(f"{doing}: {exc.message}") from exc
