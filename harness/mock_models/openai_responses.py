"""A scripted OpenAI Responses API on 127.0.0.1, for driving the real Codex CLI in tests.

    async with ResponsesMock.running() as mock:
        mock.script(Reply.shell("echo hi"))        # the next request gets a tool call
        mock.script(Reply.escalated_shell("touch /x", "why"))  # one that needs approval
        ...                                        # point Codex at mock.base_url
        first = await mock.request(1)              # waits until request 1 has arrived

Every `POST /v1/responses` is recorded (`mock.requests`) and answered by the next scripted
`Reply`; with nothing scripted, the mock echoes the conversation it was sent
(`MOCK_REPLY #n history: user[0]='...' | assistant[0]='...'`), so a test can read the history a
resumed thread replayed, or acknowledges a tool result (`MOCK saw tool output: ...`) when the
input ends with one, so Codex (which has no cap on requests per turn) never loops.

Replies stream the way Codex expects (`response.created`, `response.output_item.added`,
`response.output_text.delta`, `response.output_item.done`, `response.completed` with usage).
Each answered request reports `Reply.usage` tokens (100 in, 10 out by default), so tests can
tell per-turn usage from cumulative usage.

`Reply.hold()` and `Reply.stall()` keep a request open (before the headers, or after
`response.created`) until `release()` or until the client goes away, which sets that request's
`disconnected` event: the proof that an interrupted agent really hung up.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

from harness.mock_models import refusals
from harness.mock_models.steps import (
    Action,
    CallTool,
    Hang,
    Say,
    Shell,
    TurnScript,
    Upstream,
    WriteFile,
)

ReplyKind = Literal["text", "call", "items", "error", "failed", "stall", "hold"]

# User messages Codex injects itself; they are context, not what the user said.
CONTEXT_PREFIXES = (
    "<environment_context",
    "<user_instructions",
    "<permissions",
    "# AGENTS.md",
    "<turn_aborted",
    "<user_shell_command",
    "<skills_instructions",
    "<apps_instructions",
    "<collaboration_mode",
    "<personality",
    "<model_switch",
    "<INSTRUCTIONS",
)
TOOL_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")


@dataclass(frozen=True)
class Reply:
    kind: ReplyKind
    text: str = ""
    call: dict[str, Any] | None = None
    items: tuple[dict[str, Any], ...] = ()
    status: int = 200
    reasoning: str | None = None
    usage: tuple[int, int] = (100, 10)
    chunk: int = 8
    refusal: Upstream | None = None

    @classmethod
    def of_text(cls, text: str, *, chunk: int = 8, reasoning: str | None = None) -> Reply:
        """`text`, streamed as deltas of `chunk` characters (after a reasoning summary)."""
        return cls("text", text=text, chunk=chunk, reasoning=reasoning)

    @classmethod
    def shell(cls, command: str) -> Reply:
        """A call of whichever shell tool the request offers (exec_command for gpt-5.5)."""
        return cls("call", call={"shell": command})

    @classmethod
    def escalated_shell(cls, command: str, justification: str) -> Reply:
        """A shell call asking to run outside Codex's sandbox (`sandbox_permissions:
        require_escalated`): under approval policy `on-request` Codex asks the user first."""
        return cls("call", call={"shell": command, "escalate": justification})

    @classmethod
    def function_call(
        cls, name: str, arguments: dict[str, Any], *, namespace: str | None = None
    ) -> Reply:
        """A function call; `namespace` as Codex expects for MCP tools (`mcp__<server>`)."""
        call: dict[str, Any] = {"name": name, "arguments": arguments}
        if namespace is not None:
            call["namespace"] = namespace
        return cls("call", call=call)

    @classmethod
    def tool_search(cls, query: str) -> Reply:
        """Codex defers MCP tools behind its client-side tool_search: the model searches first."""
        return cls.of_items(
            {
                "type": "tool_search_call",
                "id": "tsc_1",
                "call_id": "call_search",
                "status": "completed",
                "execution": "client",
                "arguments": {"query": query},
            }
        )

    @classmethod
    def of_items(cls, *items: dict[str, Any]) -> Reply:
        """Raw Responses output items, streamed as they are."""
        return cls("items", items=items)

    @classmethod
    def error(cls, status: int, message: str = "scripted error") -> Reply:
        """An HTTP error before any streaming."""
        return cls("error", status=status, text=message)

    @classmethod
    def failed(cls, message: str = "scripted failure") -> Reply:
        """A `response.failed` event inside the stream."""
        return cls("failed", text=message)

    @classmethod
    def stall(cls) -> Reply:
        """Headers and `response.created`, then silence until released or disconnected."""
        return cls("stall")

    @classmethod
    def hold(cls) -> Reply:
        """No byte at all until released (then the echo) or disconnected."""
        return cls("hold")


@dataclass
class RecordedRequest:
    n: int
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    reply: Reply | None = None
    disconnected: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def input(self) -> list[dict[str, Any]]:
        items = self.body.get("input")
        return list(items) if isinstance(items, list) else []

    def texts(self, role: str) -> list[str]:
        """What `role` said in this request's input, in order, without injected context."""
        return [
            text
            for item in self.input
            if item.get("type", "message") == "message" and item.get("role") == role
            for text in _item_texts(item)
            if text.strip() and not _is_context(text)
        ]

    @property
    def last_user_text(self) -> str:
        texts = self.texts("user")
        return texts[-1] if texts else ""

    @property
    def ends_with_tool_output(self) -> bool:
        return bool(self.input) and self.input[-1].get("type") in TOOL_OUTPUTS

    @property
    def offers_tools(self) -> bool:
        return bool(self.body.get("tools"))

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def went_away(self) -> bool:
        return self.disconnected.is_set()

    def tool_outputs(self) -> list[str]:
        return [str(i.get("output")) for i in self.input if i.get("type") in TOOL_OUTPUTS]

    def dump(self) -> str:
        return json.dumps(self.body)


class ResponsesMock:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._script: list[Reply] = []
        self.turns = TurnScript()
        """Neutral scripted turns (harness.mock_models.steps); tried before `script`."""
        self._arrived = asyncio.Condition()
        self._released = asyncio.Event()
        self._ids = itertools.count(1)
        self.port = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @classmethod
    @asynccontextmanager
    async def running(cls) -> AsyncIterator[ResponsesMock]:
        mock = cls()
        app = web.Application()
        app.router.add_post("/v1/responses", mock._responses)
        # handler_cancellation: a client that hangs up cancels its handler, which is how a held
        # request learns that the agent stopped.
        runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await runner.setup()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        mock.port = sock.getsockname()[1]
        await web.SockSite(runner, sock).start()
        try:
            yield mock
        finally:
            mock.release()
            await runner.cleanup()

    def script(self, *replies: Reply) -> None:
        """Answer the next requests with `replies`, in order (then the default again)."""
        self._script.extend(replies)

    def release(self) -> None:
        """Let every held or stalled request finish."""
        self._released.set()

    def reset(self) -> None:
        """Release what is held, then forget the requests and scripts (holds work again)."""
        self._released.set()
        self._released = asyncio.Event()
        self.requests.clear()
        self._script.clear()
        self.turns.clear()

    async def request(self, n: int) -> RecordedRequest:
        """Request number `n` (from 1), once it has arrived."""
        async with self._arrived:
            await self._arrived.wait_for(lambda: len(self.requests) >= n)
        return self.requests[n - 1]

    def after(self, n: int) -> list[RecordedRequest]:
        """The requests that arrived after the first `n`."""
        return self.requests[n:]

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        recorded = RecordedRequest(
            n=len(self.requests) + 1,
            path=request.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body if isinstance(body, dict) else {},
        )
        step = self.turns.next_step(recorded)
        if step is not None:
            reply = reply_for(step)
        else:
            reply = self._script.pop(0) if self._script else self._default(recorded)
        recorded.reply = reply
        async with self._arrived:
            self.requests.append(recorded)
            self._arrived.notify_all()
        try:
            await self.turns.hold(recorded)
            return await self._answer(request, recorded, reply)
        except (asyncio.CancelledError, ConnectionResetError):
            recorded.disconnected.set()
            raise

    def _default(self, recorded: RecordedRequest) -> Reply:
        if recorded.ends_with_tool_output:
            output = recorded.input[-1].get("output")
            return Reply.of_text("MOCK saw tool output: " + _clip(str(output), 200))
        return Reply.of_text(f"MOCK_REPLY #{recorded.n} history: " + _summary(recorded.input))

    async def _answer(
        self, request: web.Request, recorded: RecordedRequest, reply: Reply
    ) -> web.StreamResponse:
        if reply.kind == "hold":
            await self._released.wait()
            reply = self._default(recorded)
        if reply.kind == "error" and reply.refusal is not None:
            return refusals.openai(reply.refusal, str(recorded.body.get("model", "mock-model")))
        if reply.kind == "error":
            return web.json_response(
                {"error": {"message": reply.text, "type": "server_error", "code": None}},
                status=reply.status,
            )
        response = web.StreamResponse(
            headers={"content-type": "text/event-stream", "cache-control": "no-cache"}
        )
        await response.prepare(request)
        stream = _Stream(response, recorded, reply)
        await stream.send({"type": "response.created", "response": stream.envelope("in_progress")})
        if reply.kind == "stall":
            await self._released.wait()
        elif reply.kind == "failed":
            failed = stream.envelope("failed")
            failed["error"] = {"code": "server_error", "message": reply.text}
            if reply.refusal is not None:
                model = str(recorded.body.get("model", "mock-model"))
                failed["error"] = refusals.openai_error(reply.refusal, model)
            await stream.send({"type": "response.failed", "response": failed})
        else:
            await stream.output(next(self._ids))
        await response.write_eof()
        return response


def reply_for(step: Action) -> Reply:
    """A neutral step in Codex's terms (a file is written with `apply_patch`)."""
    match step:
        case Say(text):
            return Reply.of_text(text, chunk=5)
        case Shell(command, escalate):
            return Reply.escalated_shell(command, escalate) if escalate else Reply.shell(command)
        case WriteFile(path, content):
            lines = "".join(f"+{line}\n" for line in content.splitlines())
            patch = f"*** Begin Patch\n*** Add File: {path}\n{lines}*** End Patch\n"
            return Reply.of_items(
                {
                    "type": "custom_tool_call",
                    "id": "ctc_write",
                    "call_id": "call_write",
                    "name": "apply_patch",
                    "input": patch,
                    "status": "completed",
                }
            )
        case CallTool(name, arguments):
            return Reply.function_call(name, dict(arguments))
        case Upstream(status, message, refusal):
            # A rate limit also comes mid-stream: `response.failed` with code
            # rate_limit_exceeded, where Codex reads the delay ("try again in 2s").
            kind: ReplyKind = "failed" if refusal == "rateLimit" else "error"
            refused = refusal != "error"
            return (
                Reply(kind, status=status, refusal=step)
                if refused
                else Reply.error(status, message)
            )
        case Hang():
            return Reply.stall()


class _Stream:
    """The SSE events of one streamed response."""

    def __init__(self, response: web.StreamResponse, recorded: RecordedRequest, reply: Reply):
        self.response = response
        self.recorded = recorded
        self.reply = reply
        self.id = f"resp_mock_{recorded.n}"

    def envelope(self, status: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "response",
            "created_at": 0,
            "model": self.recorded.body.get("model", "mock-model"),
            "status": status,
            "output": [],
        }

    async def send(self, event: dict[str, Any]) -> None:
        data = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
        await self.response.write(data.encode())

    async def output(self, serial: int) -> None:
        items = self._items(serial)
        for index, item in enumerate(items):
            await self._item(index, item)
        done = self.envelope("completed")
        done["output"] = items
        tokens_in, tokens_out = self.reply.usage
        done["usage"] = {
            "input_tokens": tokens_in,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": tokens_out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": tokens_in + tokens_out,
        }
        await self.send({"type": "response.completed", "response": done})

    def _items(self, serial: int) -> list[dict[str, Any]]:
        reply = self.reply
        items: list[dict[str, Any]] = []
        if reply.reasoning is not None:
            items.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{serial}",
                    "summary": [{"type": "summary_text", "text": reply.reasoning}],
                }
            )
        if reply.kind == "text":
            items.append(
                {
                    "type": "message",
                    "role": "assistant",
                    "id": f"msg_{serial}",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
                }
            )
        if reply.kind == "call" and reply.call is not None:
            name, arguments = self._call(reply.call)
            call = {
                "type": "function_call",
                "id": f"fc_{serial}",
                "call_id": f"call_{serial}",
                "name": name,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
            if "namespace" in reply.call:
                call["namespace"] = reply.call["namespace"]
            items.append(call)
        items.extend(dict(item) for item in reply.items)
        return items

    def _call(self, call: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        if "shell" not in call:
            return call["name"], call["arguments"]
        command = call["shell"]
        escalation: dict[str, Any] = {}
        if "escalate" in call:
            escalation = {
                "sandbox_permissions": "require_escalated",
                "justification": call["escalate"],
            }
        offered = {t.get("name") for t in self.recorded.body.get("tools") or []}
        if "exec_command" in offered:
            return "exec_command", {"cmd": command, **escalation}
        if "shell_command" in offered:
            return "shell_command", {"command": command, **escalation}
        return "shell", {"command": ["bash", "-lc", command], **escalation}

    async def _item(self, index: int, item: dict[str, Any]) -> None:
        kind = item.get("type")
        if kind == "message":
            text = item["content"][0]["text"]
            opened = {**item, "status": "in_progress", "content": []}
            await self.send(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
            step = max(1, self.reply.chunk)
            for start in range(0, len(text), step):
                await self.send(
                    {
                        "type": "response.output_text.delta",
                        "item_id": item["id"],
                        "output_index": index,
                        "content_index": 0,
                        "delta": text[start : start + step],
                    }
                )
        elif kind == "reasoning":
            opened = {**item, "summary": []}
            await self.send(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
            await self.send(
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "summary_index": 0,
                    "delta": item["summary"][0]["text"],
                }
            )
        else:
            opened = {**item, "arguments": ""} if kind == "function_call" else item
            await self.send(
                {"type": "response.output_item.added", "output_index": index, "item": opened}
            )
        await self.send({"type": "response.output_item.done", "output_index": index, "item": item})


def _item_texts(item: dict[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content]
    return [
        str(part.get("text", ""))
        for part in content or []
        if isinstance(part, dict) and part.get("type") in ("input_text", "output_text", "text")
    ]


def _is_context(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_PREFIXES)


def _clip(text: str, limit: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _summary(items: list[dict[str, Any]]) -> str:
    """`user[0]='...' | assistant[0]='...' | <function_call exec_command> | ...`"""
    parts: list[str] = []
    counts: dict[str, int] = {}
    for item in items:
        kind = item.get("type", "message")
        if kind == "message":
            role = str(item.get("role"))
            texts = [t for t in _item_texts(item) if t.strip() and not _is_context(t)]
            if role in ("developer", "system") or not texts:
                continue
            index = counts.get(role, 0)
            counts[role] = index + 1
            parts.append(f"{role}[{index}]='{_clip(' / '.join(texts))}'")
        elif kind in ("function_call", "custom_tool_call"):
            parts.append(f"<{kind} {item.get('name', '')}>")
        elif kind in TOOL_OUTPUTS:
            parts.append(f"<{kind}>")
    return " | ".join(parts)
