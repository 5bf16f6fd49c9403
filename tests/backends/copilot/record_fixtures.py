"""Record the Copilot CLI's session events for the mapping tests (fixtures/*.jsonl).

Drives the real CLI through github-copilot-sdk (no daemon) against the chat completions mock,
one scenario per file, and stores every event of the turn as the SDK serialises it. Two kinds of
bulk are elided (the ~21 k-char system prompt and the per-call message snapshot); the scratch
project path is replaced by `PROJECT`. Permission requests go to fixtures/permissions/.

    .venv/bin/python -m tests.backends.copilot.record_fixtures [--cli PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

from copilot import CopilotClient, CopilotSession, PermissionRequest, RuntimeConnection
from copilot.rpc import PermissionDecisionApproveOnce, PermissionDecisionReject
from copilot.session_events import SessionEvent

from harness.mock_models.openai_chat import ErrorReply, OpenAIChatMock

HERE = Path(__file__).resolve().parent
FIXTURES = HERE / "fixtures"
PROJECT = "/srv/a2a-project"
BUNDLED_CLI = HERE.parents[2] / ".tools/node_modules/@github/copilot-linux-x64/copilot"
ELIDED = {"model.messages_snapshot"}


def tool(name: str, **arguments: Any) -> str:
    return f"MOCK_TOOL {name} {json.dumps(arguments)}"


class Recorder:
    def __init__(self, work: Path, project: Path) -> None:
        self.work = work
        self.project = project
        self.events: list[SessionEvent] = []
        self.permissions: list[dict[str, Any]] = []

    async def on_permission(
        self, request: PermissionRequest, invocation: object
    ) -> PermissionDecisionApproveOnce | PermissionDecisionReject:
        self.permissions.append(request.to_dict())
        if "outside" in json.dumps(request.to_dict()):
            return PermissionDecisionReject(feedback="outside the working directory")
        return PermissionDecisionApproveOnce()

    def save(self, name: str, events: list[SessionEvent]) -> None:
        lines = []
        for event in events:
            raw = event.to_dict()
            if raw.get("type") == "system.message":
                content, role = raw["data"]["content"], raw["data"]["role"]
                raw["data"] = {"content": f"(elided: {len(content)} chars)", "role": role}
            elif raw.get("type") in ELIDED:
                raw["data"] = {"elided": True}
            lines.append(json.dumps(raw, sort_keys=True))
        text = "\n".join(lines) + "\n"
        (FIXTURES / f"{name}.jsonl").write_text(self.anonymise(text))

    def save_permissions(self, name: str, requests: list[dict[str, Any]]) -> None:
        if requests:
            text = json.dumps(requests, indent=1, sort_keys=True) + "\n"
            (FIXTURES / "permissions" / f"{name}.json").write_text(self.anonymise(text))

    def anonymise(self, text: str) -> str:
        return text.replace(str(self.project), PROJECT).replace(str(self.work), "/srv")

    async def turn(
        self, session: CopilotSession, name: str, prompt: str, *, abort: bool = False
    ) -> None:
        events_mark, permissions_mark = len(self.events), len(self.permissions)
        idle, streaming = asyncio.Event(), asyncio.Event()

        def watch(event: SessionEvent) -> None:
            if event.type.value == "assistant.message_delta":
                streaming.set()
            if event.type.value == "session.idle" and not event.agent_id:
                idle.set()

        unsubscribe = session.on(watch)
        await session.send(prompt)
        if abort:
            await asyncio.wait_for(streaming.wait(), 60)
            await session.abort()
        await asyncio.wait_for(idle.wait(), 60)
        unsubscribe()
        self.save(name, self.events[events_mark:])
        self.save_permissions(name, self.permissions[permissions_mark:])
        print(f"recorded {name}: {len(self.events) - events_mark} events")


async def record(cli: Path) -> None:
    work = Path(tempfile.mkdtemp(prefix="copilot-record-"))
    project = work / "project"
    project.mkdir()
    (project / "notes.txt").write_text("hello\n")
    (FIXTURES / "permissions").mkdir(parents=True, exist_ok=True)
    recorder = Recorder(work, project)
    async with OpenAIChatMock() as mock:
        mock.reply(ErrorReply(500, headers={"retry-after": "0"}), when="MOCK_FIVE_HUNDRED")
        connection = RuntimeConnection.for_stdio(path=str(cli))
        connection.env = {
            "PATH": "/usr/bin:/bin",
            "HOME": str(work / "home"),
            "COPILOT_HOME": str(work / "copilot-home"),
            "COPILOT_OFFLINE": "true",
            "COPILOT_PROVIDER_BASE_URL": mock.base_url,
            "COPILOT_MODEL": "mock-model",
        }
        client = CopilotClient(
            connection=connection, use_logged_in_user=False, working_directory=str(project)
        )
        await client.start()
        try:
            await record_sessions(client, recorder, mock.base_url)
        finally:
            await client.stop()
    shutil.rmtree(work, ignore_errors=True)


async def record_sessions(client: CopilotClient, recorder: Recorder, base_url: str) -> None:
    project = recorder.project
    options: dict[str, Any] = {
        "on_permission_request": recorder.on_permission,
        "model": "mock-model",
        "provider": {"type": "openai", "base_url": base_url},
        "working_directory": str(project),
        "on_event": recorder.events.append,
    }
    session = await client.create_session(session_id=str(uuid.uuid4()), streaming=True, **options)
    await recorder.turn(session, "text_turn", "Remember this: the secret word is BANANA.")
    await recorder.turn(session, "followup_turn", "What was the secret word?")
    await recorder.turn(session, "tool_shell", tool("bash", command="echo hi > made.txt"))
    await recorder.turn(
        session, "tool_create", tool("create", path=str(project / "new.txt"), file_text="new\n")
    )
    await recorder.turn(
        session,
        "tool_edit",
        tool("edit", path=str(project / "notes.txt"), old_str="hello", new_str="bye"),
    )
    outside = recorder.work / "outside.txt"
    await recorder.turn(
        session, "tool_refused", tool("create", path=str(outside), file_text="no\n")
    )
    await recorder.turn(session, "tool_read_outside", tool("view", path="/etc/hostname"))
    await recorder.turn(
        session, "tool_shell_outside", tool("bash", command=f"cat /etc/hostname > {outside}")
    )
    await recorder.turn(session, "aborted", "MOCK_STALL then wait", abort=True)
    await recorder.turn(session, "error_400", "MOCK_ERROR 400 please")
    await recorder.turn(session, "error_401", "MOCK_ERROR 401 please")
    await recorder.turn(session, "error_500", "MOCK_FIVE_HUNDRED please")
    await session.disconnect()
    plain = await client.create_session(session_id=str(uuid.uuid4()), streaming=False, **options)
    await recorder.turn(plain, "nonstreaming_turn", "Hello without streaming.")
    await plain.disconnect()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cli", type=Path, default=BUNDLED_CLI)
    args = parser.parse_args()
    asyncio.run(record(args.cli))
    return 0


if __name__ == "__main__":
    sys.exit(main())
