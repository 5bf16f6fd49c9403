"""The backend's lifecycle with the real binary: start, shutdown of everything it started, start
failures with a clear message, attaching to a running server, and `check` (diagnose)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from core.backend import Diagnosis, SessionBound, TextContent, TextDelta, Turn
from core.backend.base import BackendUnavailableError, running
from core.backend.config import working_directory_check
from harness.mock_models.openai_chat import OpenAIChatMock
from harness.opencode import TEST_ENV, provider_config
from wrappers.opencode import create
from wrappers.opencode.config import OpencodeConfig

pytestmark = pytest.mark.timeout(90)


def block(project: Path, home: Path, binary: Path, mock: OpenAIChatMock, **extra: Any) -> Any:
    return OpencodeConfig.model_validate(
        {
            "workingDirectory": str(project),
            "home": str(home),
            "cliPath": str(binary),
            "model": "mock/mock-model",
            "env": TEST_ENV,
            "config": provider_config(mock.base_url),
            **extra,
        }
    )


def turn(text: str, session_id: str | None = None, task_id: str = "t-1") -> Turn:
    return Turn("p", "ctx", task_id, "m", session_id, (TextContent(text),))


async def answer_of(events: AsyncIterator[Any]) -> tuple[str, str]:
    session, text = "", ""
    async for event in events:
        if isinstance(event, SessionBound):
            session = event.session_id
        elif isinstance(event, TextDelta):
            text += event.text
    return session, text


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def test_aclose_stops_the_server_and_every_task_the_backend_started(
    tmp_path: Path, project: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    backend = create(block(project, tmp_path / "home", opencode_binary, mock))
    before = asyncio.all_tasks()

    async with running(backend):  # start, serve in a task group, aclose: as the engine
        pid = backend.server_pid
        assert pid is not None and alive(pid)
        assert (await backend.health()).ok
        assert await answer_of(backend.run_turn(turn("hello"))) != ("", "")

    assert not alive(pid)
    assert backend.server_pid is None
    assert not (await backend.health()).ok
    assert asyncio.all_tasks() == before


def script(path: Path, body: str) -> Path:
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("echo 'boom: no config' >&2\nexit 3\n", "exited before listening: boom: no config"),
        ("echo starting\nexec sleep 30\n", "did not listen within 1 s"),
    ],
)
async def test_a_server_that_does_not_start_fails_start_with_the_reason(
    tmp_path: Path, project: Path, mock: OpenAIChatMock, body: str, message: str
) -> None:
    fake = script(tmp_path / "opencode", body)
    backend = create(block(project, tmp_path / "home", fake, mock, startupTimeout=1000))
    before = asyncio.all_tasks()

    with pytest.raises(BackendUnavailableError, match="OpenCode did not start") as raised:
        async with running(backend):
            pass

    assert message in str(raised.value)
    assert asyncio.all_tasks() == before


async def test_a_missing_working_directory_fails_start(
    tmp_path: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    backend = create(block(tmp_path / "missing", tmp_path / "home", opencode_binary, mock))
    with pytest.raises(BackendUnavailableError, match="does not exist"):
        await backend.start()


async def test_attaches_to_a_running_server_given_by_server_url(
    tmp_path: Path, project: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    env = {**os.environ, **TEST_ENV, "OPENCODE_SERVER_PASSWORD": "attach-pw"}
    env["OPENCODE_CONFIG_CONTENT"] = json.dumps(
        {**provider_config(mock.base_url), "model": "mock/mock-model"}
    )
    for kind in ("DATA", "CONFIG", "CACHE", "STATE"):
        env[f"XDG_{kind}_HOME"] = str(tmp_path / "own" / kind.lower())
    server = await anyio.open_process(
        [str(opencode_binary), "serve", "--hostname", "127.0.0.1", "--port", "0"],
        cwd=project,
        env=env,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        line = (await server.stdout.receive()).decode()
        url = line.split("listening on ")[1].split()[0]
        user_url = url.replace("http://", "http://opencode:attach-pw@")
        config = OpencodeConfig.model_validate(
            {"workingDirectory": str(project), "serverUrl": user_url, "model": "mock/mock-model"}
        )
        backend = create(config)
        async with running(backend):
            session, text = await answer_of(backend.run_turn(turn("attached?")))
        assert session.startswith("ses_")
        assert text == "MOCK REPLY: attached?"
        assert server.returncode is None  # not ours to stop
        assert backend.server_pid is None
    finally:
        server.terminate()
        await server.wait()
        await server.aclose()


async def test_a_turn_on_a_session_opencode_no_longer_has_starts_a_new_one(
    tmp_path: Path, project: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    backend = create(block(project, tmp_path / "home", opencode_binary, mock))
    async with running(backend):
        first, _ = await answer_of(backend.run_turn(turn("one")))
        await backend.drop_session(first)  # deletes it in OpenCode
        second, text = await answer_of(backend.run_turn(turn("two", session_id=first)))
    assert second.startswith("ses_") and second != first
    assert text == "MOCK REPLY: two"


async def test_check_reports_binary_version_directory_and_credentials_without_values(
    tmp_path: Path, project: Path, opencode_binary: Path, mock: OpenAIChatMock
) -> None:
    with_key = create(block(project, tmp_path / "home", opencode_binary, mock))
    anthropic = OpencodeConfig.model_validate(
        {
            "workingDirectory": str(tmp_path / "gone"),
            "model": "anthropic/claude-sonnet-4-5",
            "home": str(tmp_path / "home"),
            "env": {"ANTHROPIC_API_KEY": "sk-very-secret"},
        }
    )
    no_key = OpencodeConfig.model_validate(
        {
            "model": "anthropic/claude-sonnet-4-5",
            "home": str(tmp_path / "home"),
            "cliPath": str(tmp_path / "nope"),
        }
    )

    ok = await with_key.diagnose()
    keyed = await create(anthropic).diagnose()
    missing = await create(no_key).diagnose()

    # The working directory is checked by the core, once for every backend (tests/test_cli.py).
    assert [d.name for d in ok] == ["opencode binary", "credentials"]
    assert [d.ok for d in ok] == [True, True]
    assert "version 1.18.33" in ok[0].detail
    assert ok[1] == Diagnosis("credentials", True, "mock: apiKey in opencode.config")
    assert working_directory_check(anthropic).ok is False
    assert "does not exist" in working_directory_check(anthropic).detail
    assert keyed[1] == Diagnosis("credentials", True, "anthropic: $ANTHROPIC_API_KEY is set")
    assert missing[0].ok is False and "the opencode binary was not found" in missing[0].detail
    assert missing[1].ok is False
    assert "set ANTHROPIC_API_KEY" in missing[1].detail
    everything = json.dumps([d.detail for d in ok + keyed + missing])
    assert "sk-very-secret" not in everything
    assert "mock-key" not in everything
