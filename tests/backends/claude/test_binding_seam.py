"""A new binding is one folder with `serve(host, *, task_status)`: the throwaway line binding
of tests/support/line_binding, started by the daemon like HTTP and gRPC, carries a
SendMessage to the real Claude Code CLI (against the mock model) and back."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio

from core.daemon import Daemon
from harness.mock_models.anthropic import AnthropicMock
from harness.mock_models.steps import Say
from tests.backends.claude.conftest import COMPLETED, ClaudeEnv, answer
from tests.support import line_binding


async def line_call(url: str, request: dict[str, Any]) -> dict[str, Any]:
    host, port = url.removeprefix("line://").rsplit(":", 1)
    async with await anyio.connect_tcp(host, int(port)) as stream:
        await stream.send(json.dumps(request).encode() + b"\n")
        reply = b""
        while not reply.endswith(b"\n"):
            reply += await stream.receive()
    answer: dict[str, Any] = json.loads(reply)
    return answer


async def test_send_message_through_a_binding_added_as_one_folder(
    claude_env: ClaudeEnv, mock: AnthropicMock
) -> None:
    mock.turns.add([Say("Hello through the line binding.")])
    daemon = Daemon(claude_env.settings())
    message = {
        "messageId": str(uuid.uuid4()),
        "role": "ROLE_USER",
        "parts": [{"text": "Say hello."}],
    }

    async with anyio.create_task_group() as tg:
        (url,) = await tg.start(daemon.serve, [line_binding.serve])
        task = await line_call(url, {"message": message})
        await daemon.stop()

    assert task["status"]["state"] == COMPLETED
    assert answer(task) == "Hello through the line binding."
    assert mock.model_requests, "the turn reached the model through the real CLI"
