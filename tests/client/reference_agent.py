"""An A2A agent on the official a2a-sdk 1.3.0 server (not ours): the reference the client
commands and the MCP server are tested against.

    python -m tests.client.reference_agent     # prints "listening on URL", serves until killed

Its executor reports progress, then answers `echo: X` with X; `ask: Q` needs input, asking Q,
and the answer continues the task; `block` works until canceled.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
from a2a.helpers.proto_helpers import new_task_from_user_message, new_text_message, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import TaskState

from bench.sdk_agent import sdk_routes


class ReferenceExecutor(AgentExecutor):
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
        await updater.update_status(
            TaskState.TASK_STATE_WORKING,
            new_text_message("thinking it over", context_id=task.context_id, task_id=task.id),
        )
        command, _, arg = text.partition(":")
        if command == "ask" and task.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
            question = new_text_message(arg.strip(), context_id=task.context_id, task_id=task.id)
            await updater.requires_input(question)
            return
        if command == "block":
            await anyio.sleep_forever()
        answer = arg.strip() if command == "echo" else f"you said: {text}"
        await updater.add_artifact([new_text_part(answer)], name="response", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        updater = TaskUpdater(event_queue, context.task_id or "", context.context_id or "")
        await updater.cancel()


def routes(url: str) -> list[Any]:
    return sdk_routes(
        url,
        ReferenceExecutor(),
        name="reference agent",
        description="the a2a-sdk server with a small executor",
    )


def main() -> None:
    import uvicorn  # noqa: PLC0415 - only this server needs it (the SDK's server extras)
    from starlette.applications import Starlette  # noqa: PLC0415 - as above

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(Starlette(routes=routes(url)), log_level="warning", lifespan="off")
    print(f"listening on {url}", flush=True)
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
