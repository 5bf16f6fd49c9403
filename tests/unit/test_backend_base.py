"""core.backend.base: the no-op defaults, the one BackendUnavailableError, and how the engine
runs a backend's `serve` (or not, for a backend without one)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import anyio
import pytest
from anyio.abc import TaskStatus
from structlog.testing import capture_logs

from core.backend import Backend, BackendEvent, Text, Turn
from core.backend.base import (
    BackendBase,
    BackendUnavailableError,
    running,
    serve_backend,
    serving,
)
from tests.support.scripted import ScriptedBackend


class Minimal(BackendBase):
    name = "minimal"

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        yield Text(turn.text)


class Served(Minimal):
    def __init__(self) -> None:
        self.serving = anyio.Event()
        self.stopped = anyio.Event()

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        self.serving.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.stopped.set()


async def test_a_backend_on_the_base_implements_the_protocol_with_no_op_defaults() -> None:
    backend = Minimal()

    assert isinstance(backend, Backend)
    await backend.start()
    assert (await backend.health()).ok
    assert await backend.diagnose() == []
    assert backend.resume_command("s") is None
    await backend.drop_session("s")
    await backend.aclose()


async def test_serve_runs_in_the_callers_task_group_until_cancelled() -> None:
    backend = Served()
    async with anyio.create_task_group() as tg:
        await tg.start(serve_backend, backend)
        assert backend.serving.is_set()
        tg.cancel_scope.cancel()

    assert backend.stopped.is_set()


async def test_a_backend_without_serve_is_ready_at_once() -> None:
    async with anyio.create_task_group() as tg:
        await tg.start(serve_backend, ScriptedBackend())


def test_unavailable_shows_the_caller_a_safe_sentence_and_logs_the_detail() -> None:
    error = BackendUnavailableError(
        "/opt/agent/bin/agent: exec format error", caller_message="The agent is not installed."
    )

    with capture_logs() as logs:
        failed = error.failure(event="agent.unavailable")

    assert failed.kind == "unavailable"
    assert failed.message.startswith("The agent is not installed. The daemon log has the details")
    assert "/opt/agent" not in failed.message
    assert logs[0]["event"] == "agent.unavailable"
    assert logs[0]["exc_info"] is error


def test_the_default_caller_message() -> None:
    with pytest.raises(BackendUnavailableError, match="no binary") as caught:
        raise BackendUnavailableError("no binary")
    assert caught.value.caller_message == "The agent is not available."


class FailsToServe(Minimal):
    def __init__(self) -> None:
        self.closed = False

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        raise BackendUnavailableError("the agent's server did not listen")

    async def aclose(self) -> None:
        self.closed = True


async def test_running_starts_serves_and_closes() -> None:
    backend = Served()

    async with running(backend) as same:
        assert same is backend
        assert backend.serving.is_set()

    assert backend.stopped.is_set()


async def test_a_serve_that_fails_before_ready_is_raised_as_it_is_and_closed() -> None:
    backend = FailsToServe()

    with pytest.raises(BackendUnavailableError, match="did not listen"):
        async with running(backend):
            pytest.fail("never served")

    assert backend.closed


async def test_serving_raises_start_failures_inside_the_callers_error_mapping() -> None:
    class StartupFailedError(Exception):
        pass

    @contextmanager
    def as_startup() -> Iterator[None]:
        try:
            yield
        except BackendUnavailableError as exc:
            raise StartupFailedError(str(exc)) from exc

    with pytest.raises(StartupFailedError, match="did not listen"):
        async with serving(FailsToServe(), as_startup):
            pytest.fail("never served")
