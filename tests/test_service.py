"""TaskService used directly (no HTTP): admission rules that race or need small limits."""

from __future__ import annotations

import inspect
from pathlib import Path

import anyio
import pytest

from core.engine.config import EngineConfig, Limits
from core.engine.lanes import LaneFullError
from core.engine.service import TaskService
from core.storage.memory import InMemoryTaskStore
from core.storage.sqlite.tasks import SqliteTaskStore
from core.wire.errors import UnsupportedOperationError
from core.wire.models import (
    ListTasksRequest,
    Message,
    Part,
    SendMessageConfiguration,
    SendMessageRequest,
    Task,
)
from tests.support.scripted import ScriptedBackend

NOW = SendMessageConfiguration(return_immediately=True)


def request(text: str, message_id: str, **extra: str) -> SendMessageRequest:
    message = Message(message_id=message_id, role="ROLE_USER", parts=[Part(text=text)], **extra)
    return SendMessageRequest(message=message, configuration=NOW)


async def test_full_lane_refuses_without_leaving_a_task(backend: ScriptedBackend) -> None:
    store = InMemoryTaskStore()
    async with TaskService(
        store, backend, EngineConfig(limits=Limits(max_queued_turns=1))
    ).running() as service:
        first = await service.send("p", request("block", "m1", context_id="c"))
        assert isinstance(first, Task)
        await backend.entered(first.id).wait()
        await service.send("p", request("echo: queued", "m2", context_id="c"))
        with pytest.raises(LaneFullError):
            await service.send("p", request("echo: one too many", "m3", context_id="c"))
        listed = await service.list("p", ListTasksRequest(context_id="c"))
        assert listed.total_size == 2
        backend.release(first.id)


async def test_concurrent_follow_ups_continue_a_task_once(
    backend: ScriptedBackend, tmp_path: Path
) -> None:
    # SQLite, so that loading the task really yields to the other follow-up.
    store = SqliteTaskStore(tmp_path / "tasks.sqlite3")
    async with TaskService(store, backend).running() as service:
        asked = await service.send(
            "p",
            SendMessageRequest(
                message=Message(message_id="m1", role="ROLE_USER", parts=[Part(text="ask: which?")])
            ),
        )
        assert isinstance(asked, Task)
        outcomes: list[str] = []

        async def follow(n: int) -> None:
            try:
                await service.send("p", request("block", f"f{n}", task_id=asked.id))
                outcomes.append("accepted")
            except UnsupportedOperationError:
                outcomes.append("refused")

        async with anyio.create_task_group() as tg:
            tg.start_soon(follow, 1)
            tg.start_soon(follow, 2)
        assert sorted(outcomes) == ["accepted", "refused"]
        await backend.entered(asked.id).wait()
        backend.release(asked.id)


def test_the_service_takes_at_most_seven_arguments() -> None:
    """What extends the engine comes as one `Plugins`, not as a keyword argument each."""
    parameters = list(inspect.signature(TaskService.__init__).parameters)

    assert parameters[0] == "self"
    assert len(parameters) - 1 <= 7, parameters
