"""Record the steps the real Antigravity SDK streams, for the mapping's unit tests.

    .venv/bin/python -m tests.backends.antigravity.record

runs each scenario below (one turn each, in one conversation) with the pinned SDK and its
runtime against the project's chat completions mock, and writes the steps of the turn, as the
SDK's `Step` models dump them, to `recordings/<scenario>.json`. A development tool, not a test.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from google.antigravity import Agent, LocalOpenAIAgentConfig
from google.antigravity.hooks import policy

from harness.mock_models.openai_chat import MODEL, OpenAIChatMock, TextReply, ToolCallReply

HERE = Path(__file__).resolve().parent
RECORDINGS = HERE / "recordings"
# Stable text in place of what changes each run (paths of the temporary folder, times, ids).
WORK = "/work"


def scenarios(work: Path) -> dict[str, tuple[str, Any]]:
    return {
        "text_turn": ("Say hello.", TextReply("Hello there, how can I help today?")),
        "command_turn": (
            "Run the command.",
            ToolCallReply("run_command", {"CommandLine": "echo ran-it", "Cwd": str(work)}),
        ),
        "write_turn": (
            "Write the file.",
            ToolCallReply(
                "write_to_file",
                {
                    "TargetFile": str(work / "notes.txt"),
                    "CodeContent": "hello\n",
                    "Overwrite": False,
                    "Description": "a note",
                },
            ),
        ),
        "failed_command_turn": (
            "Run the failing command.",
            ToolCallReply("run_command", {"CommandLine": "exit 3", "Cwd": str(work)}),
        ),
        "invalid_call_turn": (
            "Call it wrong.",
            ToolCallReply("write_to_file", {"TargetFile": str(work / "x.txt")}),
        ),
    }


def _stable(value: Any, root: str) -> Any:
    if isinstance(value, str):
        return value.replace(root, WORK)
    if isinstance(value, list):
        return [_stable(v, root) for v in value]
    if isinstance(value, dict):
        return {k: _stable(v, root) for k, v in value.items()}
    return value


async def main() -> None:
    RECORDINGS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        work = root / "work"
        work.mkdir()
        async with OpenAIChatMock() as mock:
            for prompt, reply in scenarios(work).values():
                mock.reply(reply, when=prompt, times=1)
            config = LocalOpenAIAgentConfig(
                model=MODEL,
                base_url=mock.base_url,
                save_dir=str(root / "save"),
                app_data_dir=str(root / "app"),
                workspaces=[str(work)],
                policies=[policy.allow_all()],
            )
            async with Agent(config) as agent:
                conversation = agent.conversation
                for name, (prompt, _) in scenarios(work).items():
                    await conversation.send(prompt)
                    steps = [
                        _stable(step.model_dump(mode="json", exclude_defaults=True), str(root))
                        async for step in conversation.receive_steps()
                    ]
                    path = RECORDINGS / f"{name}.json"
                    path.write_text(json.dumps(steps, indent=1) + "\n")
                    print(f"{path.name}: {len(steps)} steps")


if __name__ == "__main__":
    anyio.run(main)
