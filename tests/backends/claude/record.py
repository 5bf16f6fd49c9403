"""Record what the real Claude Code CLI writes, for the mapping's unit tests.

    .venv/bin/python -m tests.backends.claude.record

runs each scenario below against the project's Anthropic mock and writes the CLI's stdout
messages of one turn (exactly the frames claude-agent-sdk parses into Messages: control frames
and SDK-only session-state frames left out) to `recordings/<scenario>.jsonl`. A development tool,
not a test: it taps the SDK's subprocess transport, which is internal to the (pinned) SDK.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage
from claude_agent_sdk._internal.transport.subprocess_cli import SubprocessCLITransport

from harness.mock_models.anthropic import AnthropicMock, Reply, ToolUse

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE / "recordings"
SKIPPED_TYPES = {"control_request", "control_response", "control_cancel_request"}


class TappedTransport(SubprocessCLITransport):
    """The SDK's own transport, keeping a copy of every message frame it reads."""

    def __init__(self, options: ClaudeAgentOptions, frames: list[dict[str, Any]]) -> None:
        super().__init__(prompt=_nothing(), options=options)
        self._frames = frames

    def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        return self._tap(super().read_messages())

    async def _tap(self, source: AsyncIterator[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        async for frame in source:
            if frame.get("type") not in SKIPPED_TYPES and not frame.get("sdk_host_only"):
                self._frames.append(frame)
            yield frame


async def _nothing() -> AsyncIterator[dict[str, Any]]:
    return
    yield {}


@dataclass
class Session:
    """One CLI process against the mock; `turn()` records the frames of one turn."""

    mock: AnthropicMock
    workdir: Path
    home: Path
    extra: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    frames: list[dict[str, Any]] = field(default_factory=list)
    session_id: str | None = None

    def options(self, resume: str | None) -> ClaudeAgentOptions:
        env = {
            "ANTHROPIC_BASE_URL": self.mock.url,
            "ANTHROPIC_API_KEY": "sk-ant-recording",
            "CLAUDE_CONFIG_DIR": str(self.home),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_MAX_RETRIES": "0",
            **self.env,
        }
        settings: dict[str, Any] = {
            "cwd": self.workdir,
            "env": env,
            "permission_mode": "acceptEdits",
            "system_prompt": {"type": "preset", "preset": "claude_code"},
            "setting_sources": [],
            "include_partial_messages": True,
            "resume": resume,
            **self.extra,
        }
        return ClaudeAgentOptions(**settings)

    async def turn(
        self,
        client: ClaudeSDKClient,
        prompt: str,
        during: Callable[[ClaudeSDKClient], Coroutine[Any, Any, None]] | None = None,
    ) -> list[dict[str, Any]]:
        self.frames.clear()
        await client.query(prompt)
        async with anyio.create_task_group() as tg:
            if during is not None:
                tg.start_soon(during, client)
            async for message in client.receive_response():
                if isinstance(message, ResultMessage):
                    self.session_id = message.session_id
        return list(self.frames)

    def client(self, resume: str | None = None) -> ClaudeSDKClient:
        options = self.options(resume)
        return ClaudeSDKClient(options, transport=TappedTransport(options, self.frames))


def _interrupt_when_stalled(
    mock: AnthropicMock, n: int
) -> Callable[[ClaudeSDKClient], Coroutine[Any, Any, None]]:
    async def during(client: ClaudeSDKClient) -> None:
        await mock.wait_for_request(n)
        await anyio.sleep(0.3)  # let the CLI read the stalled reply's first events
        await client.interrupt()

    return during


async def record_all(out: Path) -> None:
    recordings: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        workdir, home = root / "work", root / "home"
        workdir.mkdir()
        async with AnthropicMock() as mock:
            mock.on(
                "use a tool",
                Reply(
                    text="Running a command.",
                    tool_use=ToolUse(
                        "Bash", {"command": "echo hello-from-tool", "description": "say hello"}
                    ),
                ),
            )
            mock.on(
                "write a file",
                Reply(
                    tool_use=ToolUse(
                        "Write", {"file_path": str(workdir / "notes.txt"), "content": "first\n"}
                    )
                ),
            )
            mock.on(
                "edit the file",
                Reply(
                    tool_use=ToolUse(
                        "Edit",
                        {
                            "file_path": str(workdir / "notes.txt"),
                            "old_string": "first",
                            "new_string": "second",
                        },
                    )
                ),
            )
            mock.on(
                "think first", Reply(thinking="Let me think about it.", text="Thought it through.")
            )
            mock.on("fail with 500", Reply(error=500))
            mock.on("fail with 401", Reply(error=401, error_message="invalid x-api-key"))
            mock.on("fail with 529", Reply(error=529, error_message="Overloaded"))
            mock.on("stall now", Reply(text="never sent", stall=30))
            mock.on(
                "loop on tools",
                Reply(tool_use=ToolUse("Bash", {"command": "echo step", "description": "step"})),
            )

            session = Session(mock, workdir, home)
            async with session.client() as client:
                recordings["text_turn"] = await session.turn(client, "Remember the word PAPAYA.")
                first_id = session.session_id
                recordings["follow_up_turn"] = await session.turn(client, "Which word was it?")
                recordings["tool_turn"] = await session.turn(client, "Please use a tool.")
                recordings["write_turn"] = await session.turn(client, "Please write a file.")
                recordings["edit_turn"] = await session.turn(client, "Now edit the file.")
                recordings["thinking_turn"] = await session.turn(client, "Please think first.")
                recordings["api_error_500"] = await session.turn(client, "Please fail with 500.")
                recordings["api_error_401"] = await session.turn(client, "Please fail with 401.")
                recordings["api_error_529"] = await session.turn(client, "Please fail with 529.")
                during = _interrupt_when_stalled(mock, len(mock.model_requests) + 1)
                recordings["interrupted_turn"] = await session.turn(client, "stall now", during)
                recordings["after_interrupt_turn"] = await session.turn(client, "Still there?")

            resumed = Session(mock, workdir, home)
            async with resumed.client(resume=first_id) as client:
                recordings["resumed_turn"] = await resumed.turn(client, "Which word, again?")

            capped = Session(mock, workdir, home, extra={"max_turns": 1})
            async with capped.client() as client:
                recordings["max_turns"] = await capped.turn(client, "Please loop on tools.")

            unstreamed = Session(mock, workdir, home, extra={"include_partial_messages": False})
            async with unstreamed.client() as client:
                recordings["unstreamed_turn"] = await unstreamed.turn(client, "Say something.")

    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - a one-off tool, nothing else runs
    for name, frames in recordings.items():
        path = out / f"{name}.jsonl"
        path.write_text("".join(json.dumps(f, sort_keys=True) + "\n" for f in frames))
        print(f"{path}: {len(frames)} frames")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=RECORDINGS)
    anyio.run(record_all, parser.parse_args().out)


if __name__ == "__main__":
    main()
