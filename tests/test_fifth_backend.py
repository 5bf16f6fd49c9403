"""A fifth backend is one package: `tests/support/fifth_backend` registered by an entry point
(a `*.dist-info/entry_points.txt` in a folder put on the path, as `pip install` would leave
it), with no other file of the project changed. The real daemon serves it, validates its
`fifth` block with its own model, and it talks to the project's chat mock over HTTP."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from core import registry
from core.settings import ConfigError, load
from tests.support.daemon import REPO, Daemon, MakeDaemon
from tests.support.fifth_backend import FifthConfig
from tests.support.mock_models.openai_chat import OpenAIChatMock, StallReply
from tests.support.wire import V1, rpc, sse_events, user_message

ENTRY_POINTS = """\
[a2a_wrapper.backends]
fifth = tests.support.fifth_backend:SPEC
"""


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fifth backend installed by entry point, for this process and the daemons it starts."""
    site = tmp_path / "site"
    dist = site / "a2a_wrapper_fifth-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: a2a-wrapper-fifth\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    path = os.pathsep.join([str(site), str(REPO), os.environ.get("PYTHONPATH", "")])
    monkeypatch.setenv("PYTHONPATH", path.rstrip(os.pathsep))
    yield site


def fifth_config(tmp_path: Path, mock: OpenAIChatMock, **block: Any) -> dict[str, Any]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return {
        "backend": "fifth",
        "storage": {"kind": "sqlite", "path": str(tmp_path / "tasks.sqlite3")},
        "fifth": {"baseUrl": mock.base_url, "workingDirectory": str(work), **block},
    }


async def send(url: str, text: str, context_id: str, *, wait: bool = True) -> dict[str, Any]:
    message = user_message(text, contextId=context_id, messageId=uuid.uuid4().hex)
    params: dict[str, Any] = {"message": message}
    if not wait:
        params["configuration"] = {"returnImmediately": True}
    return await jsonrpc(url, "SendMessage", params)


async def jsonrpc(url: str, method: str, params: Any) -> dict[str, Any]:
    async with aiohttp.ClientSession() as http:
        response = await http.post(f"{url}/a2a/jsonrpc", json=rpc(method, params), headers=V1)
        body: dict[str, Any] = await response.json()
    assert "result" in body, body
    result: dict[str, Any] = body["result"]
    task: dict[str, Any] = result.get("task", result)
    return task


def answer(task: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for a in task.get("artifacts", []) for p in a["parts"])


def test_the_entry_point_makes_the_backend_known(installed: Path) -> None:
    assert "fifth" in registry.names()
    spec = registry.spec_for("fifth")
    assert spec is not None
    assert spec.config_model is FifthConfig


def test_its_block_is_validated_by_its_own_model(installed: Path) -> None:
    settings = load(
        None, overrides={"backend": "fifth", "fifth": {"baseUrl": "http://m/v1"}}, environ={}
    )
    assert settings.block(FifthConfig).base_url == "http://m/v1"

    with pytest.raises(ConfigError) as caught:
        load(None, overrides={"backend": "fifth", "fifth": {"baseUrl": "ftp://m", "x": 1}})
    assert "fifth.baseUrl: must be an http:// or https:// URL" in str(caught.value)
    assert "fifth.x: unknown key" in str(caught.value)


def test_without_the_entry_point_the_name_is_unknown() -> None:
    assert "fifth" not in registry.names()
    with pytest.raises(registry.UnknownBackendError, match="unknown backend 'fifth'"):
        registry.spec_for("fifth")


async def test_the_daemon_serves_a_conversation_that_survives_a_restart(
    installed: Path, tmp_path: Path, daemons: MakeDaemon
) -> None:
    async with OpenAIChatMock() as mock:
        config = fifth_config(tmp_path, mock)
        first = daemons(config)
        url = first.start()
        async with aiohttp.ClientSession() as http, http.get(f"{url}/ready") as ready:
            # Healthy only while its serve() runs: the engine hosts it in its task group.
            assert ready.status == 200, await ready.text()

        told = await send(url, "Remember: the secret word is KIWI.", "ctx-1")
        asked = await send(url, "What was the secret word?", "ctx-1")
        assert told["status"]["state"] == "TASK_STATE_COMPLETED", told
        assert "The secret word was KIWI." in answer(asked)
        assert first.stop() == 0

        second = daemons(config)
        url = second.start()
        again = await send(url, "What was the secret word?", "ctx-1")
        other = await send(url, "What was the secret word?", "ctx-2")

    assert "The secret word was KIWI." in answer(again), "the session was resumed from disk"
    assert "never told" in answer(other)


async def test_streaming_sends_the_text_as_it_comes(
    installed: Path, tmp_path: Path, daemons: MakeDaemon
) -> None:
    async with OpenAIChatMock() as mock:
        config = {**fifth_config(tmp_path, mock), "output": {"mode": "stream"}}
        url = daemons(config).start()
        message = user_message("one two three", contextId="ctx", messageId="m-1")
        async with aiohttp.ClientSession() as http:
            response = await http.post(
                f"{url}/a2a/jsonrpc",
                json=rpc("SendStreamingMessage", {"message": message}),
                headers=V1,
            )
            events = [data["result"] for _, data in await sse_events(response)]

    chunks = [e["artifactUpdate"] for e in events if "artifactUpdate" in e]
    text = "".join(p["text"] for c in chunks for p in c["artifact"]["parts"])
    assert len(chunks) > 3, "one chunk per streamed word"
    assert text.startswith("MOCK REPLY: ") and "one two three" in text
    assert events[-1]["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"


async def test_cancel_stops_the_model_request(
    installed: Path, tmp_path: Path, daemons: MakeDaemon
) -> None:
    async with OpenAIChatMock() as mock:
        mock.reply(StallReply("thinking "), when="stall here")
        url = daemons(fifth_config(tmp_path, mock)).start()
        task = await send(url, "stall here", "ctx", wait=False)
        request = await mock.wait_for_request("stall here")

        canceled = await jsonrpc(url, "CancelTask", {"id": task["id"]})
        await mock.wait_until(lambda: request.disconnected)

    assert canceled["status"]["state"] == "TASK_STATE_CANCELED"
    assert not request.completed


async def test_a_model_error_fails_the_task_with_a_safe_message(
    installed: Path, tmp_path: Path, daemons: MakeDaemon
) -> None:
    async with OpenAIChatMock() as mock:
        url = daemons(fifth_config(tmp_path, mock)).start()
        task = await send(url, "MOCK_ERROR 500", "ctx")
        after = await send(url, "hello again", "ctx")

    message = "".join(p["text"] for p in task["status"]["message"]["parts"])
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert message.startswith("The model refused the turn. The daemon log has the details")
    assert "mock error" not in message
    assert after["status"]["state"] == "TASK_STATE_COMPLETED", "the session goes on"


def test_a_wrong_block_stops_the_daemon_naming_the_key(
    installed: Path, tmp_path: Path, daemons: MakeDaemon
) -> None:
    config = {"backend": "fifth", "fifth": {"baseUrl": "http://127.0.0.1:9/v1", "bogus": 1}}
    daemon: Daemon = daemons(config)

    code, _, err = daemon.run_to_exit()

    assert code == 2
    assert "fifth.bogus: unknown key" in err
