"""A small ACP agent, run as a real subprocess over stdio (the `acp` library's agent side):
what the quirk tests drive when the real agents cannot show a case on demand.

It offers no `session/load` (unless FAKE_ACP_LOAD=1) and answers each prompt by its first
word: `plan` (a plan, then an edit tool call carrying a diff), `read <path>` / `write <path>`
(the client's fs/*), `mcp` (the MCP servers its session got), `terminal` (the client's
terminal/*: runs this Python printing "from-terminal"), `ask` (a permission request; answers
with the option chosen), `hang` (until cancelled); anything else is echoed as "FAKE: <text>".
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    plan_entry,
    run_agent,
    start_edit_tool_call,
    tool_diff_content,
    update_agent_message_text,
    update_plan,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, McpCapabilities, PermissionOption, ToolCallUpdate


class FakeAgent:
    """The methods it answers (the library answers method-not-found for the others)."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.cancelled: dict[str, asyncio.Event] = {}
        self.mcp: dict[str, list[str]] = {}

    def on_connect(self, conn: Client) -> None:
        self.client = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        load = os.environ.get("FAKE_ACP_LOAD") == "1"
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=load, mcp_capabilities=McpCapabilities(http=True)
            ),
        )

    async def new_session(
        self, cwd: str, mcp_servers: list[Any] | None = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = "fake-" + uuid.uuid4().hex[:8]
        self.mcp[session_id] = [
            f"{s.name}:{getattr(s, 'type', 'stdio')}:{getattr(s, 'command', getattr(s, 'url', ''))}"
            for s in mcp_servers or []
        ]
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        text = " ".join(getattr(block, "text", "") for block in prompt).strip()
        word, _, rest = text.partition(" ")
        reply = await self._answer(session_id, word, rest.strip(), text)
        if reply is None:
            return PromptResponse(stop_reason="cancelled")
        await self._say(session_id, reply)
        return PromptResponse(stop_reason="end_turn")

    async def _say(self, session_id: str, text: str) -> None:
        assert self.client is not None
        await self.client.session_update(session_id, update_agent_message_text(text))

    async def _answer(self, session_id: str, word: str, rest: str, text: str) -> str | None:
        client = self.client
        assert client is not None
        if word in ("read", "write"):
            return await self._files(client, session_id, word, rest)
        answers = {"plan": self._plan, "terminal": self._terminal, "ask": self._ask}
        if word in answers:
            return await answers[word](client, session_id)
        if word == "mcp":
            return "mcp: " + ", ".join(sorted(self.mcp.get(session_id, [])))
        if word == "hang":
            await self.cancelled.setdefault(session_id, asyncio.Event()).wait()
            return None
        return f"FAKE: {text}"

    async def _plan(self, client: Client, session_id: str) -> str:
        await client.session_update(
            session_id, update_plan([plan_entry("write the file", status="in_progress")])
        )
        start = start_edit_tool_call("edit-1", "Write new.txt", "new.txt", "hello")
        await client.session_update(session_id, start)
        diff = tool_diff_content("new.txt", "hello")
        await client.session_update(
            session_id, update_tool_call("edit-1", status="completed", content=[diff])
        )
        return "planned"

    async def _files(self, client: Client, session_id: str, word: str, path: str) -> str:
        try:
            if word == "read":
                found = await client.read_text_file(path=path, session_id=session_id)
            else:
                await client.write_text_file(path=path, content="written", session_id=session_id)
        except RequestError as exc:
            return f"refused: {exc.data}"
        return "wrote it" if word == "write" else "read: " + found.content

    async def _terminal(self, client: Client, session_id: str) -> str:
        made = await client.create_terminal(
            command=sys.executable, args=["-c", "print('from-terminal')"], session_id=session_id
        )
        terminal = made.terminal_id
        await client.wait_for_terminal_exit(session_id=session_id, terminal_id=terminal)
        output = await client.terminal_output(session_id=session_id, terminal_id=terminal)
        await client.release_terminal(session_id=session_id, terminal_id=terminal)
        return f"terminal said: {output.output.strip()}"

    async def _ask(self, client: Client, session_id: str) -> str:
        options = [
            PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
            PermissionOption(option_id="always", name="Always", kind="allow_always"),
            PermissionOption(option_id="no", name="Reject", kind="reject_once"),
        ]
        call = ToolCallUpdate(tool_call_id="call-1", title="touch it", kind="edit")
        answer = await client.request_permission(
            options=options, session_id=session_id, tool_call=call
        )
        outcome = answer.outcome
        return f"outcome: {getattr(outcome, 'option_id', outcome.outcome)}"


if __name__ == "__main__":
    asyncio.run(run_agent(cast("Agent", FakeAgent())))
