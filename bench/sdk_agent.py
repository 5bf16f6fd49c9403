"""The official a2a-sdk server with an executor that answers at once (the `sdk` baseline)."""

from __future__ import annotations

from typing import Any

from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill


class InstantExecutor(AgentExecutor):
    """Publishes what the daemon's instant backend leads to: the task, one `response` artifact
    with the prompt, and COMPLETED with the prompt as the status message."""

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        if message is None:
            raise ValueError("no message")
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(message)
            task.id, task.context_id = context.task_id or task.id, context.context_id or task.id
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        text = context.get_user_input()
        await updater.add_artifact([new_text_part(text)], name="response", last_chunk=True)
        await updater.complete(new_text_message(text, context_id=task.context_id, task_id=task.id))

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        return None


def sdk_routes(
    url: str,
    executor: AgentExecutor | None = None,
    *,
    name: str = "sdk baseline",
    description: str = "a2a-sdk server with an instant executor",
) -> list[Any]:
    """The SDK's JSON-RPC and card routes for `executor` (the instant one by default), served
    at `url` (the client tests' reference agent is this server with an executor of its own)."""
    card = AgentCard(
        name=name,
        description=description,
        version="0.1.0",
        supported_interfaces=[
            AgentInterface(
                url=f"{url}/a2a/jsonrpc", protocol_binding="JSONRPC", protocol_version="1.0"
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text"],
        default_output_modes=["text"],
        skills=[AgentSkill(id="echo", name="echo", description="echo", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=executor or InstantExecutor(),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    return [*create_jsonrpc_routes(handler, "/a2a/jsonrpc"), *create_agent_card_routes(card)]
