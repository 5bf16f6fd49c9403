"""One agent of the crew, reached with the official a2a-sdk client (v1.0 or v0.3, JSON-RPC or
REST, streaming, polling or push); the SDK's types are converted in sdk.py.

`AgentLink.connect` reads the agent card (is it reachable, which versions does it speak), picks
one interface (v1.0 first, then v0.3; JSON-RPC first, then REST, unless the plan says
otherwise) and builds the SDK client for it. Everything it returns is plain data (`Update`,
`RemoteTask`).
"""

from __future__ import annotations

import hashlib
import os
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence

import anyio
import httpx
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import (
    AgentCard,
    AgentInterface,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotCancelableError,
    TaskPushNotificationConfig,
    UnsupportedOperationError,
)

from examples.crew.agents.push import PushReceiver
from examples.crew.agents.sdk import (
    AgentBusyError,
    AgentError,
    AgentUnreachableError,
    RemoteTask,
    Update,
    choose_interface,
    closing,
    major_minor,
    read_card,
    settled,
    to_remote,
    to_update,
    translated,
)
from examples.crew.plan.changes import PATCH_MEDIA_TYPE
from examples.crew.plan.plan import AgentSpec

__all__ = [
    "AgentBusyError",
    "AgentError",
    "AgentLink",
    "AgentUnreachableError",
    "RemoteTask",
    "Update",
    "closing",
    "trace_id_of",
]

_TIMEOUT = httpx.Timeout(30.0, read=120.0)
# Without a word from the webhook for this long, a task followed by push is looked at anyway
# (a lost notification); at least the plan's pollInterval.
PUSH_FALLBACK = 30.0
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


class AgentLink:
    """A connected agent. Safe to use from several steps at once."""

    def __init__(
        self,
        name: str,
        spec: AgentSpec,
        *,
        card: AgentCard,
        interface: AgentInterface,
        client: Client,
        http: httpx.AsyncClient,
    ) -> None:
        self.name = name
        self.spec = spec
        self.card = card
        self.interface = interface
        self._client = client
        self._http = http
        self.pushable = _pushable(spec, card)
        self.streaming = _streams(spec, card)
        self.push: PushReceiver | None = None  # set by the job when `pushable`
        self.gets = 0  # GetTask calls made
        self.push_tasks: set[str] = set()  # remote tasks followed by push
        self.push_seconds = 0.0  # time spent waiting on the webhook

    @property
    def mode(self) -> str:
        """How this link waits on a task: push, stream or poll."""
        return "push" if self.pushable else "stream" if self.streaming else "poll"

    @property
    def protocol(self) -> str:
        return major_minor(self.interface.protocol_version) or self.interface.protocol_version

    @property
    def binding(self) -> str:
        return self.interface.protocol_binding

    @property
    def versions(self) -> list[str]:
        """Every protocol version the card offers (Major.Minor)."""
        found = {major_minor(i.protocol_version) for i in self.card.supported_interfaces}
        return sorted((v for v in found if v), reverse=True)

    @property
    def can_look_up(self) -> bool:
        """Whether a task can be found by its messageId (ListTasks exists from v1.0 on)."""
        return self.protocol == "1.0"

    @classmethod
    async def connect(
        cls,
        name: str,
        spec: AgentSpec,
        environ: Mapping[str, str] | None = None,
        *,
        trace_id: str | None = None,
    ) -> AgentLink:
        env = os.environ if environ is None else environ
        headers: dict[str, str] = {}
        if spec.token_env is not None:
            token = env.get(spec.token_env)
            if not token:
                raise AgentError(f"agent {name!r}: environment variable {spec.token_env} is unset")
            headers["Authorization"] = f"Bearer {token}"
        hooks = {"request": [_traced(trace_id)]} if trace_id else {}
        http = httpx.AsyncClient(timeout=_TIMEOUT, headers=headers, event_hooks=hooks)
        try:
            card = await read_card(http, spec.card_url)
            interface = choose_interface(card, spec)
            only = AgentCard()
            only.CopyFrom(card)
            del only.supported_interfaces[:]
            only.supported_interfaces.append(interface)
            streaming = _streams(spec, card)
            config = ClientConfig(
                streaming=streaming,
                polling=not streaming,
                httpx_client=http,
                supported_protocol_bindings=[interface.protocol_binding],
            )
            client = ClientFactory(config).create(only)
        except AgentError as exc:
            await http.aclose()
            raise type(exc)(f"agent {name!r} ({spec.card_url}): {exc}") from exc
        except BaseException:
            await http.aclose()
            raise
        return cls(name, spec, card=card, interface=interface, client=client, http=http)

    async def aclose(self) -> None:
        await self._client.close()
        await self._http.aclose()

    # ----- operations ----------------------------------------------------------------------

    async def send(
        self,
        text: str,
        *,
        message_id: str,
        context_id: str,
        task_id: str | None = None,
        reference_task_ids: Sequence[str] = (),
        patches: Sequence[str] = (),
    ) -> AsyncIterator[Update]:
        """Send a message (a new task, or the answer to an input-required one) and yield what
        happens to its task until it ends or needs input. The first update carries the task
        id. Streams when the agent can, else returns at once and polls. `patches` go as file
        parts (`text/x-diff`), which an a2a-wrapper daemon applies to the workspace first."""
        files = [
            Part(raw=p.encode(), filename=f"{i + 1}.patch", media_type=PATCH_MEDIA_TYPE)
            for i, p in enumerate(patches)
        ]
        message = Message(
            role=Role.ROLE_USER,
            message_id=message_id,
            context_id=context_id,
            task_id=task_id or "",
            parts=[Part(text=text), *files],
            reference_task_ids=list(reference_task_ids),
        )
        configuration = SendMessageConfiguration(return_immediately=not self.streaming)
        if self.push is not None and not task_id:  # an answer's task has its config already
            configuration.task_push_notification_config.CopyFrom(self._push_config(""))
        request = SendMessageRequest(message=message, configuration=configuration)
        last: Update | None = None
        async with translated(), closing(self._client.send_message(request)) as events:
            async for event in events:
                update = to_update(event)
                if update is None:
                    continue
                last = update
                yield update
                if update.reply is not None or settled(update.state):
                    return
        if last is not None and not self.streaming:
            async for update in self._wait(last.task_id):
                yield update

    async def follow(self, task_id: str) -> AsyncIterator[Update]:
        """Yield a task's state now, then its changes until it ends or needs input."""
        if self.push is not None:  # this run's webhook (a restarted crew has a new one)
            async with translated():
                await self._client.create_task_push_notification_config(self._push_config(task_id))
        task = await self.get(task_id)
        yield Update(task.id, task.context_id, task.state, task.note)
        if settled(task.state):
            return
        if not self.streaming:
            async for update in self._wait(task_id):
                yield update
            return
        async with translated():
            try:
                subscription = self._client.subscribe(SubscribeToTaskRequest(id=task_id))
                async with closing(subscription) as events:
                    async for event in events:
                        change = to_update(event)
                        if change is None:
                            continue
                        yield change
                        if settled(change.state):
                            return
            except UnsupportedOperationError:
                pass  # it ended between the get and the subscribe
        task = await self.get(task_id)
        yield Update(task.id, task.context_id, task.state, task.note)

    def _push_config(self, task_id: str) -> TaskPushNotificationConfig:
        if self.push is None:
            raise RuntimeError("no push receiver")
        return TaskPushNotificationConfig(
            task_id=task_id, url=self.push.webhook(), token=self.push.token
        )

    async def _wait(self, task_id: str) -> AsyncIterator[Update]:
        """Until the task settles: by push when there is a receiver, else by polling."""
        if self.push is None:
            async for update in self._poll(task_id):
                yield update
            return
        self.push_tasks.add(task_id)
        fallback = max(PUSH_FALLBACK, self.spec.poll_interval / 1000)
        while True:
            started = anyio.current_time()
            woke = await self.push.wait(task_id, fallback)
            self.push_seconds += anyio.current_time() - started
            if woke:
                return  # the caller confirms with GetTask: a notification is only a hint
            task = await self.get(task_id)
            if settled(task.state):
                yield Update(task.id, task.context_id, task.state, task.note)
                return

    async def _poll(self, task_id: str) -> AsyncIterator[Update]:
        state: str | None = None
        interval = self.spec.poll_interval / 1000
        while True:
            task = await self.get(task_id)
            if task.state != state:
                state = task.state
                yield Update(task.id, task.context_id, task.state, task.note)
            if settled(task.state):
                return
            await anyio.sleep(interval)

    async def get(self, task_id: str) -> RemoteTask:
        self.gets += 1
        async with translated():
            return to_remote(await self._client.get_task(GetTaskRequest(id=task_id)))

    async def cancel(self, task_id: str) -> RemoteTask:
        """Cancel a task; one that already ended is returned as it is."""
        async with translated():
            try:
                return to_remote(await self._client.cancel_task(CancelTaskRequest(id=task_id)))
            except TaskNotCancelableError:
                return to_remote(await self._client.get_task(GetTaskRequest(id=task_id)))

    async def find(self, context_id: str, message_id: str) -> RemoteTask | None:
        """The task that our message `message_id` started in `context_id`, if the agent has
        one (v1.0 ListTasks). Used when a crash lost the task id between send and ledger."""
        if not self.can_look_up:
            return None
        token = ""
        async with translated():
            while True:
                page = await self._client.list_tasks(
                    ListTasksRequest(context_id=context_id, page_size=100, page_token=token)
                )
                for task in page.tasks:
                    if any(m.message_id == message_id for m in task.history):
                        return to_remote(await self._client.get_task(GetTaskRequest(id=task.id)))
                token = page.next_page_token
                if not token:
                    return None


def trace_id_of(job_id: str) -> str:
    """The job's W3C trace id: the same on every run of the job, so a resumed job goes on in
    the trace it started."""
    return hashlib.sha256(job_id.encode()).hexdigest()[:32]


def _traced(trace_id: str) -> Callable[[httpx.Request], Awaitable[None]]:
    """An httpx request hook putting the job's trace context on every call (card included):
    a `traceparent` with the job's trace id and a span id of the call's own."""

    async def hook(request: httpx.Request) -> None:
        request.headers["traceparent"] = f"00-{trace_id}-{secrets.token_hex(8)}-01"

    return hook


def _streams(spec: AgentSpec, card: AgentCard) -> bool:
    return (
        spec.follow in ("auto", "stream")
        and not _pushable(spec, card)
        and (card.capabilities.streaming)
    )


def _pushable(spec: AgentSpec, card: AgentCard) -> bool:
    """Push when the plan asks for it, or by default when the card offers it and the agent is
    on this machine (the crew's webhook listens on loopback only); only if the card offers
    it (else polling, the fallback)."""
    if not card.capabilities.push_notifications:
        return False
    host = httpx.URL(spec.card_url).host
    return spec.follow == "push" or (spec.follow == "auto" and host in LOOPBACK_HOSTS)
