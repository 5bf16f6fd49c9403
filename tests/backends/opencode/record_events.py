"""Record the `/event` stream of the real `opencode serve` for the mapping tests.

Not a test: run it by hand after an OpenCode upgrade, then re-run the mapping tests
(`tests/backends/opencode/test_events.py`) and read the diff of `recorded/`:

    .venv/bin/python -m tests.backends.opencode.record_events [--opencode PATH]

Each scenario runs one turn against the project's mock model and writes every event of that
session, in order, as one JSON object per line to `recorded/<scenario>.jsonl`. The first line
is `{"turn": {"sessionID", "messageID"}}`: the ids the backend would have known.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from harness.mock_models.openai_chat import (
    ErrorReply,
    OpenAIChatMock,
    StallReply,
    TextReply,
    ToolCallReply,
)
from wrappers.opencode.client import OpencodeClient, new_message_id
from wrappers.opencode.launch import find_binary

HERE = Path(__file__).resolve().parent
OUT = HERE / "recorded"
PASSWORD = "record-password"  # noqa: S105 - a throwaway local server


def mock_config(base_url: str) -> dict[str, Any]:
    return {
        "autoupdate": False,
        "share": "disabled",
        "snapshot": False,
        "model": "mock/mock-model",
        "small_model": "mock/mock-model",
        "enabled_providers": ["mock"],
        "permission": {"question": "deny", "external_directory": "deny", "doom_loop": "deny"},
        "provider": {
            "mock": {
                "npm": "@ai-sdk/openai-compatible",
                "name": "Mock",
                "options": {"baseURL": base_url, "apiKey": "mock-key"},
                "models": {"mock-model": {"name": "Mock", "tool_call": True}},
            }
        },
    }


class Recorder:
    def __init__(self, client: OpencodeClient) -> None:
        self.client = client
        self.events: list[dict[str, Any]] = []
        self.changed = asyncio.Condition()

    async def read(self, connected: asyncio.Event) -> None:
        async for event in self.client.events():
            if event.get("type") == "server.connected":
                connected.set()
            async with self.changed:
                self.events.append(event)
                self.changed.notify_all()

    async def wait(self, predicate: Callable[[dict[str, Any]], bool], start: int) -> int:
        async with asyncio.timeout(60), self.changed:
            while True:
                for index in range(start, len(self.events)):
                    if predicate(self.events[index]):
                        return index
                await self.changed.wait()

    async def turn(
        self,
        name: str,
        text: str,
        *,
        during: Callable[[str], Awaitable[None]] | None = None,
        permission: list[dict[str, str]] | None = None,
    ) -> str:
        session = await self.client.create_session(title=name, permission=permission)
        sid = str(session["id"])
        mid = new_message_id()
        start = len(self.events)
        await self.client.prompt_async(sid, message_id=mid, parts=[{"type": "text", "text": text}])
        if during is not None:
            await during(sid)
        await self.wait(lambda e: e["type"] == "session.idle" and _sid(e) == sid, start)
        # Late events (e.g. after an abort) come shortly after; the next prompt flushes them.
        marker = await self.client.create_session(title="flush")
        await self.wait(lambda e: _sid(e) == marker["id"], start)
        lines = [{"turn": {"sessionID": sid, "messageID": mid}}]
        lines += [e for e in self.events[start:] if _sid(e) == sid]
        (OUT / f"{name}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
        print(f"{name}: {len(lines) - 1} events")
        return sid


def _sid(event: dict[str, Any]) -> str | None:
    props = event.get("properties") or {}
    for value in (props.get("sessionID"), (props.get("info") or {}).get("sessionID")):
        if isinstance(value, str):
            return value
    part = props.get("part")
    return part.get("sessionID") if isinstance(part, dict) else None


async def record(binary: Path, work: Path) -> None:
    project = work / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello from the project\n")
    async with OpenAIChatMock() as mock:
        env = {**os.environ, "OPENCODE_SERVER_PASSWORD": PASSWORD}
        for kind in ("DATA", "CONFIG", "CACHE", "STATE"):
            env[f"XDG_{kind}_HOME"] = str(work / kind.lower())
        env.update(
            OPENCODE_CONFIG_CONTENT=json.dumps(mock_config(mock.base_url)),
            OPENCODE_DISABLE_MODELS_FETCH="1",
            OPENCODE_DISABLE_AUTOUPDATE="1",
            OPENCODE_DISABLE_DEFAULT_PLUGINS="1",
            npm_config_registry="http://127.0.0.1:9/",
        )
        proc = await asyncio.create_subprocess_exec(
            str(binary),
            "serve",
            "--hostname",
            "127.0.0.1",
            "--port",
            "0",
            cwd=project,
            env=env,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
        assert proc.stdout is not None
        line = (await proc.stdout.readline()).decode()
        client = OpencodeClient(line.split()[-1], directory=str(project), password=PASSWORD)
        recorder = Recorder(client)
        connected = asyncio.Event()
        reader = asyncio.ensure_future(recorder.read(connected))
        try:
            await connected.wait()
            await scenarios(recorder, mock)
        finally:
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader
            await client.aclose()
            proc.terminate()
            await proc.wait()


async def scenarios(recorder: Recorder, mock: OpenAIChatMock) -> None:
    client = recorder.client
    mock.reply(TextReply("Hello from the mock model."), when="say hello")
    await recorder.turn("text", "say hello")
    mock.reply(
        ToolCallReply("bash", {"command": "echo hi", "description": "Print hi"}), when="run bash"
    )
    await recorder.turn("tool_bash", "run bash")
    mock.reply(
        ToolCallReply("write", {"filePath": "made.txt", "content": "made\n"}), when="write file"
    )
    await recorder.turn("tool_write", "write file")
    mock.reply(ToolCallReply("read", {"filePath": "/nonexistent/x"}), when="read missing")
    await recorder.turn("tool_error", "read missing")
    mock.reply(ErrorReply(400, "bad request from mock"), when="fail 400")
    await recorder.turn("error_400", "fail 400")
    mock.reply(ErrorReply(401, "Incorrect API key provided"), when="fail 401")
    await recorder.turn("error_401", "fail 401")

    async def abort_after_two_retries(sid: str) -> None:
        await mock.wait_for_request("fail 500", count=2, within=30)
        await client.abort(sid)

    mock.reply(
        ErrorReply(500, "mock server error", headers={"retry-after-ms": "50"}), when="fail 500"
    )
    await recorder.turn("error_500_retry", "fail 500", during=abort_after_two_retries)

    async def abort_when_stalled(sid: str) -> None:
        request = await mock.wait_for_request("stall here")
        await asyncio.sleep(0.2)  # let the first words reach the event stream
        await client.abort(sid)
        await mock.wait_until(lambda: request.disconnected, within=10)

    mock.reply(StallReply(before="Partial answer "), when="stall here")
    await recorder.turn("abort", "stall here", during=abort_when_stalled)

    async def reject_permission(sid: str) -> None:
        start = 0
        index = await recorder.wait(
            lambda e: e["type"] == "permission.asked" and _sid(e) == sid, start
        )
        request_id = recorder.events[index]["properties"]["id"]
        await client.reply_permission(request_id, "reject", "nobody can approve this")

    await record_abort_then_next(recorder, mock)

    mock.reply(
        ToolCallReply("bash", {"command": "echo hi", "description": "Print hi"}), when="ask first"
    )
    await recorder.turn(
        "permission_rejected",
        "ask first",
        during=reject_permission,
        permission=[{"permission": "bash", "pattern": "*", "action": "ask"}],
    )


async def record_abort_then_next(recorder: Recorder, mock: OpenAIChatMock) -> None:
    """Abort a turn and prompt again at the first idle: the late events of the aborted turn
    then arrive while the next one runs."""
    client = recorder.client
    mock.reply(StallReply(before="Partial answer "), when="stall again")
    session = await client.create_session(title="abort_then_next")
    sid = str(session["id"])
    first, second = new_message_id(), ""
    start = len(recorder.events)
    await client.prompt_async(
        sid, message_id=first, parts=[{"type": "text", "text": "stall again"}]
    )
    await mock.wait_for_request("stall again")
    await client.abort(sid)
    await recorder.wait(lambda e: e["type"] == "session.idle" and _sid(e) == sid, start)
    second = new_message_id()
    await client.prompt_async(sid, message_id=second, parts=[{"type": "text", "text": "go on"}])

    def completed(event: dict[str, Any]) -> bool:
        info = event["properties"].get("info") or {}
        return (
            event["type"] == "message.updated"
            and info.get("parentID") == second
            and bool((info.get("time") or {}).get("completed"))
        )

    done = await recorder.wait(completed, start)
    end = await recorder.wait(lambda e: e["type"] == "session.idle" and _sid(e) == sid, done)
    lines: list[dict[str, Any]] = [
        {"turn": {"sessionID": sid, "messageID": first}},
        {"turn": {"sessionID": sid, "messageID": second}},
    ]
    lines += [e for e in recorder.events[start : end + 1] if _sid(e) == sid]
    (OUT / "abort_then_next.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    print(f"abort_then_next: {len(lines) - 2} events")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--opencode", type=Path)
    args = parser.parse_args()
    binary = args.opencode or find_binary(None)
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="record-opencode-") as work:
        asyncio.run(record(binary, Path(work)))


if __name__ == "__main__":
    main()
