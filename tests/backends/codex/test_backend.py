"""The Codex backend against the real codex binary and the mock model: warm threads, resume by
id, interrupt, crash recovery, shutdown. (The daemon-level proofs are in test_e2e.py.)"""

from __future__ import annotations

import os
import signal
import sys
import uuid
from collections.abc import AsyncGenerator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs

from core.backend import BackendEvent, Failed, Progress, SessionBound, TextDelta
from core.backend.base import BackendUnavailableError
from harness.mock_models.openai_responses import Reply, ResponsesMock
from harness.mock_models.steps import Shell
from tests.backends.codex.conftest import MakeBackend
from tests.backends.codex.support import run, session_of, turn
from tests.support.errors import assert_logged_safely
from wrappers.codex.backend import CodexBackend
from wrappers.codex.config import CodexConfig
from wrappers.codex.options import codex_binary


def text_of(events: list[BackendEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def processes_named(name: str) -> list[int]:
    """Pids of the processes whose argv[0] is `name` (not the wrappers that mention it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv0 = (entry / "cmdline").read_bytes().split(b"\0", 1)[0]
        except OSError:
            continue
        if argv0 == name.encode():
            found.append(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_a_follow_up_turn_reuses_the_warm_thread_and_process(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    pid = backend.app_server_pid

    first = await run(backend, turn("Remember the word PAPAYA.", task="t1"))
    thread = session_of(first)
    second = await run(backend, turn("Which word?", session=thread, task="t2"))

    assert session_of(second) == thread
    assert backend.app_server_pid == pid
    assert backend.warm_threads == [thread]
    history = mock.requests[1]
    assert history.texts("user") == ["Remember the word PAPAYA.", "Which word?"]
    assert history.texts("assistant") == [text_of(first)]


async def test_an_evicted_thread_is_resumed_by_id_with_its_history(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend(maxWarm=1)

    a = session_of(await run(backend, turn("Remember PAPAYA.", task="a1", context="a")))
    b = session_of(await run(backend, turn("Something else.", task="b1", context="b")))
    assert backend.warm_threads == [b], "maxWarm 1: the idle thread a was unloaded"
    again = await run(backend, turn("Which word?", session=a, task="a2", context="a"))

    assert session_of(again) == a
    assert "PAPAYA" in text_of(again)
    assert mock.requests[-1].texts("user") == ["Remember PAPAYA.", "Which word?"]


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_idle_threads_are_unloaded_after_warm_idle(make_backend: MakeBackend) -> None:
    clock = Clock()
    backend = await make_backend(clock=clock, warmIdle=60_000)
    thread = session_of(await run(backend, turn("Remember PAPAYA.", task="t1")))
    clock.now += 59.9
    assert await backend.evict_idle() == []

    clock.now += 0.1
    evicted = await backend.evict_idle()

    assert evicted == [thread]
    assert backend.warm_threads == []
    resumed = await run(backend, turn("Which word?", session=thread, task="t2"))
    assert "PAPAYA" in text_of(resumed)


async def test_dropping_a_session_unloads_its_thread_from_codex(make_backend: MakeBackend) -> None:
    closed: list[str] = []

    def tap(_: str, message: dict[str, Any]) -> None:
        if message.get("method") == "thread/closed":
            closed.append(message["params"]["threadId"])

    backend = await make_backend(tap=tap)
    thread = session_of(await run(backend, turn("hello")))

    await backend.drop_session(thread)

    assert backend.warm_threads == []
    assert closed == [thread], "Codex reports the thread unloaded by the time drop returns"


async def test_a_session_codex_cannot_resume_starts_a_new_thread_and_says_so(
    make_backend: MakeBackend,
) -> None:
    backend = await make_backend()
    gone = str(uuid.uuid4())

    events = await run(backend, turn("hello", session=gone))

    assert session_of(events) != gone
    note = events[1]
    assert isinstance(note, Progress)
    assert f"could not resume session {gone}" in note.text


@pytest.mark.timeout(30)
async def test_interrupt_stops_the_running_command_and_the_thread_goes_on(
    make_backend: MakeBackend, mock: ResponsesMock, codex_root: Path
) -> None:
    backend = await make_backend()
    marker = f"a2a-marker-{uuid.uuid4().hex[:8]}"
    ready = codex_root / "work" / "ready"
    os.mkfifo(ready)
    # One process named `marker` says it runs (through the fifo), then sleeps for an hour.
    sleeper = "import time; open('ready', 'w').write('ready\\n'); time.sleep(3600)"
    mock.turns.add([Shell(f'exec -a {marker} {sys.executable} -c "{sleeper}"')])
    request = turn("Run the long command.", task="t1")
    events: list[BackendEvent] = []

    async def consume() -> None:
        async for event in backend.run_turn(request):
            events.append(event)

    fifo = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            with anyio.fail_after(15):
                await anyio.wait_readable(fifo)
            assert os.read(fifo, 100) == b"ready\n"
            assert processes_named(marker)
            tg.cancel_scope.cancel()
    finally:
        os.close(fifo)
    requests_before = len(mock.requests)
    with anyio.fail_after(2):
        await backend.interrupt(request)

    assert processes_named(marker) == []
    assert len(mock.requests) == requests_before
    thread = session_of(events)
    follow_up = await run(backend, turn("Still there?", session=thread, task="t2"))
    assert session_of(follow_up) == thread
    assert mock.requests[-1].texts("user")[-1] == "Still there?"
    assert "Run the long command." in mock.requests[-1].texts("user")


async def test_a_crashed_app_server_fails_its_turn_and_the_next_turn_starts_a_new_one(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    thread = session_of(await run(backend, turn("Remember PAPAYA.", task="t1")))
    crashed_pid = backend.app_server_pid
    assert crashed_pid is not None
    mock.script(Reply.hold())
    events: list[BackendEvent] = []

    async def consume() -> None:
        async for event in backend.run_turn(turn("Hold on.", session=thread, task="t2")):
            events.append(event)

    with capture_logs() as logs:
        async with anyio.create_task_group() as tg:
            tg.start_soon(consume)
            await mock.request(2)
            os.kill(crashed_pid, signal.SIGKILL)

    failed = events[-1]
    assert isinstance(failed, Failed)
    assert "The Codex app-server stopped during the turn" in failed.message
    # How it ended (it quotes the process's stderr) is for the log, under the message's id.
    assert_logged_safely(failed.message, logs, secret="code -9")
    assert not (await backend.health()).ok
    after = await run(backend, turn("Which word?", session=thread, task="t3"))
    assert session_of(after) == thread
    assert backend.app_server_pid not in (None, crashed_pid)
    assert "PAPAYA" in text_of(after)
    assert (await backend.health()).ok


async def test_aclose_stops_the_app_server_and_everything_it_started(
    make_backend: MakeBackend,
) -> None:
    backend = await make_backend()
    await run(backend, turn("hello"))
    pid = backend.app_server_pid
    assert pid is not None

    with anyio.fail_after(10):
        await backend.aclose()  # the app-server, its readers and the idle evictor

    assert not alive(pid)
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)
    assert backend.app_server_pid is None


async def test_health_and_diagnose(make_backend: MakeBackend) -> None:
    backend = await make_backend()

    health = await backend.health()
    checks = {d.name: d for d in await backend.diagnose()}

    assert health.ok
    assert "0.163.0" in health.detail
    assert checks["codex binary"].ok
    assert checks["codex binary"].detail.startswith("codex-cli 0.163.0")
    assert checks["git repository"].ok
    assert checks["credentials"].detail == "MOCK_API_KEY is set (the key of model provider mock)"
    assert "mock-key" not in str(checks)


async def test_start_refuses_a_working_directory_outside_git_without_the_flag(
    make_backend: MakeBackend,
) -> None:
    with pytest.raises(BackendUnavailableError, match="skipGitRepoCheck"):
        await make_backend(skipGitRepoCheck=False)


async def test_start_refuses_a_missing_working_directory(
    make_backend: MakeBackend, tmp_path: Path
) -> None:
    with pytest.raises(BackendUnavailableError, match="is not a directory"):
        await make_backend(workingDirectory=str(tmp_path / "missing"))


async def test_diagnose_works_before_start(codex_config: Callable[..., CodexConfig]) -> None:
    backend = CodexBackend(codex_config())

    checks = await backend.diagnose()

    assert [c.name for c in checks] == [
        "codex binary",
        "git repository",
        "credentials",
        "safety",
    ]
    assert all(c.ok for c in checks)
    assert not (await backend.health()).ok


async def test_session_bound_comes_before_the_model_answers(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    mock.script(Reply.hold())
    events: list[BackendEvent] = []

    async def consume() -> None:
        async for event in backend.run_turn(turn("hello")):
            events.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        held = await mock.request(1)
        bound = list(events)
        mock.release()

    assert len(bound) == 1
    assert isinstance(bound[0], SessionBound)
    assert held.headers.get("thread-id") == bound[0].session_id
    assert text_of(events).startswith("MOCK_REPLY #1")


async def test_turns_of_different_contexts_run_at_once_on_one_app_server(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    mock.script(Reply.hold(), Reply.hold())
    answers: dict[str, list[BackendEvent]] = {}

    async def ask(context: str) -> None:
        answers[context] = await run(
            backend, turn(f"I am {context}.", task=f"task-{context}", context=context)
        )

    async with anyio.create_task_group() as tg:
        tg.start_soon(ask, "alpha")
        tg.start_soon(ask, "beta")
        await mock.request(2)  # both turns are with the model at the same time
        mock.release()

    assert "I am alpha." in text_of(answers["alpha"])
    assert "beta" not in text_of(answers["alpha"])
    assert "I am beta." in text_of(answers["beta"])
    assert "alpha" not in text_of(answers["beta"])
    assert session_of(answers["alpha"]) != session_of(answers["beta"])


async def test_a_turn_whose_consumer_goes_away_is_stopped_even_without_interrupt(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    mock.script(Reply.hold())
    events = backend.run_turn(turn("hello", task="t1"))
    assert isinstance(events, AsyncGenerator)
    first = await anext(events)
    assert isinstance(first, SessionBound)

    async with anyio.create_task_group() as tg:

        async def consume() -> None:
            async for _ in events:
                pass

        tg.start_soon(consume)
        held = await mock.request(1)
        tg.cancel_scope.cancel()
    await events.aclose()

    with anyio.fail_after(10):
        await held.disconnected.wait()
    follow_up = await run(backend, turn("next", session=first.session_id, task="t2"))
    assert session_of(follow_up) == first.session_id
    assert text_of(follow_up).startswith("MOCK_REPLY")


async def test_cli_path_picks_the_codex_binary(make_backend: MakeBackend) -> None:
    bundled = codex_binary(CodexConfig())
    backend = await make_backend(cliPath=str(bundled))

    events = await run(backend, turn("hello"))

    assert text_of(events).startswith("MOCK_REPLY #1")
    assert f"({bundled})" in {d.name: d for d in await backend.diagnose()}["codex binary"].detail


async def test_aclose_during_a_turn_ends_that_turn_with_the_reason(
    make_backend: MakeBackend, mock: ResponsesMock
) -> None:
    backend = await make_backend()
    mock.script(Reply.hold())
    events: list[BackendEvent] = []

    async def consume() -> None:
        async for event in backend.run_turn(turn("hello")):
            events.append(event)

    async with anyio.create_task_group() as tg:
        tg.start_soon(consume)
        held = await mock.request(1)
        with anyio.fail_after(10):
            await backend.aclose()

    failed = events[-1]
    assert isinstance(failed, Failed)
    assert "The Codex app-server stopped during the turn" in failed.message
    with anyio.fail_after(5):
        await held.disconnected.wait()
