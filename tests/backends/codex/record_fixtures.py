"""Record what the real `codex app-server` sends during a turn, as fixtures for the mapping tests.

    .venv/bin/python -m tests.backends.codex.record_fixtures

Each scenario runs one turn through the real backend against the mock model and writes every
message the app-server sent during `run_turn` (responses and notifications, as received) to
`fixtures/<scenario>.jsonl`. Re-record after changing the pinned Codex version.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio

from core.backend import TextContent, Turn
from harness.codex import codex_block
from harness.mock_models.openai_responses import Reply, ResponsesMock
from tests.support.hosting import Hosted
from wrappers.codex.backend import CodexBackend
from wrappers.codex.config import CodexConfig

FIXTURES = Path(__file__).parent / "fixtures"

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hello\n*** End Patch\n"


class Recorder:
    def __init__(self, mock: ResponsesMock, root: Path) -> None:
        self.mock = mock
        self.root = root
        self.messages: list[dict[str, Any]] = []
        self.backend: CodexBackend | None = None
        self.hosted: Hosted | None = None
        self.session: str | None = None
        self.turns = 0

    def tap(self, direction: str, message: dict[str, Any]) -> None:
        self.messages.append(message)

    async def open(self, **overrides: Any) -> CodexBackend:
        config = CodexConfig.model_validate(codex_block(self.mock.base_url, self.root, **overrides))
        self.backend = CodexBackend(config, tap=self.tap)
        self.hosted = Hosted(self.backend)
        await self.hosted.start()
        return self.backend

    async def close(self) -> None:
        if self.hosted is not None:
            await self.hosted.aclose()

    def turn(self, text: str) -> Turn:
        self.turns += 1
        return Turn(
            principal="recorder",
            context_id="ctx",
            task_id=f"task-{self.turns}",
            message_id=f"msg-{self.turns}",
            session_id=self.session,
            parts=(TextContent(text),),
        )

    async def record(self, name: str, text: str, *replies: Reply) -> None:
        assert self.backend is not None
        self.mock.script(*replies)
        self.messages = []
        async for event in self.backend.run_turn(self.turn(text)):
            if self.session is None and hasattr(event, "session_id"):
                self.session = event.session_id
        self.save(name)

    async def record_interrupted(self, name: str) -> None:
        assert self.backend is not None
        backend = self.backend
        self.mock.script(Reply.hold())
        self.messages = []
        turn = self.turn("Wait for the model, then be interrupted.")
        seen = len(self.mock.requests)
        async with anyio.create_task_group() as tg:

            async def consume() -> None:
                async for _ in backend.run_turn(turn):
                    pass

            tg.start_soon(consume)
            await self.mock.request(seen + 1)
            tg.cancel_scope.cancel()
        await backend.interrupt(turn)
        self.save(name)

    def save(self, name: str) -> None:
        lines = [json.dumps(m, sort_keys=True) for m in self.messages]
        (FIXTURES / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"{name}: {len(lines)} messages")


def text_items(*texts: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_pre_{i}",
            "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        for i, text in enumerate(texts)
    ]


Scenario = Callable[[Recorder], Awaitable[None]]


async def conversation(rec: Recorder) -> None:
    await rec.open()
    await rec.record("text", "Remember the word PAPAYA.")
    await rec.record("shell_tool", "Run it.", Reply.shell("echo hello-from-tool"))
    await rec.record("failing_tool", "Run a failing command.", Reply.shell("exit 3"))
    await rec.record(
        "reasoning", "Think first.", Reply.of_text("Thought about it.", reasoning="Pondering.")
    )
    preamble = text_items("Let me look.")[0]
    call = {
        "type": "function_call",
        "id": "fc_pre",
        "call_id": "call_pre",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": "echo two-messages"}),
        "status": "completed",
    }
    await rec.record("two_messages", "Talk, run, talk.", Reply.of_items(preamble, call))
    patch = {
        "type": "custom_tool_call",
        "id": "ctc_patch",
        "call_id": "call_patch",
        "name": "apply_patch",
        "input": PATCH,
        "status": "completed",
    }
    await rec.record("file_change", "Add hello.txt.", Reply.of_items(patch))
    await rec.record("http_500", "Fail with 500.", Reply.error(500))
    await rec.record("http_401", "Fail with 401.", Reply.error(401, "invalid api key"))
    await rec.record("stream_failed", "Fail inside the stream.", Reply.failed())
    await rec.record_interrupted("interrupted")
    session = rec.session
    await rec.close()
    # A new app-server resuming the thread: usage totals now include every earlier turn.
    await rec.open()
    rec.session = session
    await rec.record("resumed", "Which word did I ask you to remember?")
    await rec.close()


async def missing_key(rec: Recorder) -> None:
    await rec.open(env={})
    await rec.record("missing_key", "No key.")
    await rec.close()


async def main() -> None:
    FIXTURES.mkdir(exist_ok=True)
    for scenario in (conversation, missing_key):
        with tempfile.TemporaryDirectory(prefix="codex-record-") as scratch:
            async with ResponsesMock.running() as mock:
                recorder = Recorder(mock, Path(scratch))
                try:
                    await scenario(recorder)
                finally:
                    await recorder.close()


if __name__ == "__main__":
    anyio.run(main)
