"""Interop: the official a2a-sdk client drives the daemon through every supported mode."""

from __future__ import annotations

import anyio
import pytest
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    SendMessageConfiguration,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskNotFoundError,
    TaskState,
    UnsupportedOperationError,
)

from tests.interop.conftest import MakeSdk, collect, user_msg
from tests.support.scripted import ScriptedBackend


async def test_send_blocking(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        [event] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("echo: hi")))
        )
        task = event.task
        assert task.status.state == TaskState.TASK_STATE_COMPLETED
        assert task.artifacts[0].parts[0].text == "hi"
        assert task.history[0].parts[0].text == "echo: hi"


async def test_send_non_blocking(sdk: MakeSdk, backend: ScriptedBackend) -> None:
    async with await sdk(streaming=False) as client:
        request = SendMessageRequest(
            message=user_msg("block"),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        [event] = await collect(client.send_message(request))
        task = event.task
        assert task.status.state == TaskState.TASK_STATE_SUBMITTED
        await backend.entered(task.id).wait()
        working = await client.get_task(GetTaskRequest(id=task.id))
        assert working.status.state == TaskState.TASK_STATE_WORKING
    async with await sdk() as streaming:
        watch = streaming.subscribe(SubscribeToTaskRequest(id=task.id))
        first = await anext(watch)
        assert first.task.id == task.id
        backend.release(task.id)
        rest = [event async for event in watch]
        assert rest[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        done = await streaming.get_task(GetTaskRequest(id=task.id))
        assert done.status.state == TaskState.TASK_STATE_COMPLETED


async def test_stream(sdk: MakeSdk) -> None:
    async with await sdk() as client:
        events = await collect(client.send_message(SendMessageRequest(message=user_msg("echo: s"))))
        kinds = [e.WhichOneof("payload") for e in events]
        assert kinds == ["task", "artifact_update", "status_update"]
        assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
        assert events[1].artifact_update.artifact.parts[0].text == "s"


async def test_direct_message_reply(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        [event] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("reply: yo")))
        )
        assert event.WhichOneof("payload") == "message"
        assert event.message.parts[0].text == "yo"


async def test_get_with_history_length(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        [first] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("ask: which?")))
        )
        task = first.task
        await collect(
            client.send_message(
                SendMessageRequest(message=user_msg("echo: this", task.id, task.context_id))
            )
        )
        got = await client.get_task(GetTaskRequest(id=task.id, history_length=1))
        assert [m.parts[0].text for m in got.history] == ["echo: this"]
        full = await client.get_task(GetTaskRequest(id=task.id))
        assert len(full.history) == 3


# ListTasks is new in v1.0.
@pytest.mark.parametrize("mode", ["v10-jsonrpc", "v10-rest", "v10-grpc"])
async def test_list(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        for n in range(3):
            request = SendMessageRequest(message=user_msg(f"echo: {n}", context_id="ctx-list"))
            await collect(client.send_message(request))
        page = await client.list_tasks(ListTasksRequest(context_id="ctx-list", page_size=2))
        assert len(page.tasks) == 2
        assert page.total_size == 3
        assert page.next_page_token
        rest = await client.list_tasks(
            ListTasksRequest(context_id="ctx-list", page_size=2, page_token=page.next_page_token)
        )
        assert len(rest.tasks) == 1
        assert rest.next_page_token == ""


async def test_cancel_running_task(sdk: MakeSdk, backend: ScriptedBackend) -> None:
    async with await sdk(streaming=False) as client:
        request = SendMessageRequest(
            message=user_msg("block"),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        [event] = await collect(client.send_message(request))
        await backend.entered(event.task.id).wait()
        canceled = await client.cancel_task(CancelTaskRequest(id=event.task.id))
        assert canceled.status.state == TaskState.TASK_STATE_CANCELED
        assert backend.interrupted == [event.task.id]


async def test_subscribe_two_subscribers(sdk: MakeSdk, backend: ScriptedBackend) -> None:
    async with await sdk() as client:
        request = SendMessageRequest(
            message=user_msg("block"),
            configuration=SendMessageConfiguration(return_immediately=True),
        )
        async with await sdk(streaming=False) as blocking:
            [event] = await collect(blocking.send_message(request))
        task_id = event.task.id
        await backend.entered(task_id).wait()
        results: dict[int, list[str]] = {}
        subscribed = [anyio.Event(), anyio.Event()]

        async def watch(n: int) -> None:
            seen: list[str] = []
            async for ev in client.subscribe(SubscribeToTaskRequest(id=task_id)):
                if not seen:
                    subscribed[n].set()
                seen.append(
                    ev.WhichOneof("payload")
                    + ":"
                    + (
                        TaskState.Name(ev.status_update.status.state)
                        if ev.HasField("status_update")
                        else ""
                    )
                )
            results[n] = seen

        with anyio.fail_after(10):
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, 0)
                tg.start_soon(watch, 1)
                await subscribed[0].wait()
                await subscribed[1].wait()
                backend.release(task_id)
        assert results[0] == results[1]
        assert results[0] == ["task:", "artifact_update:", "status_update:TASK_STATE_COMPLETED"]


async def test_continuation_of_input_required_task(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        [first] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("ask: name?")))
        )
        task = first.task
        assert task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert task.status.message.parts[0].text == "name?"
        [second] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("echo: Ada", task.id)))
        )
        assert second.task.id == task.id
        assert second.task.context_id == task.context_id
        assert second.task.status.state == TaskState.TASK_STATE_COMPLETED


async def test_message_to_terminal_task(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        [first] = await collect(
            client.send_message(SendMessageRequest(message=user_msg("echo: x")))
        )
        with pytest.raises(UnsupportedOperationError):
            await collect(
                client.send_message(
                    SendMessageRequest(
                        message=user_msg("again", first.task.id, first.task.context_id)
                    )
                )
            )


async def test_unknown_task(sdk: MakeSdk) -> None:
    async with await sdk(streaming=False) as client:
        with pytest.raises(TaskNotFoundError):
            await client.get_task(GetTaskRequest(id="does-not-exist"))
