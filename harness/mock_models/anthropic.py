"""A scriptable mock of the Anthropic Messages API, for driving the real Claude Code CLI offline.

`AnthropicMock` is an aiohttp server on 127.0.0.1, port 0, living in the test's event loop:

    async with AnthropicMock() as mock:
        mock.on("fail please", Reply(error=500))
        ... point ANTHROPIC_BASE_URL at mock.url ...
        request = await mock.wait_for_request(1)
        assert "PAPAYA" in request.history()

How a `POST /v1/messages` is answered, first match wins:
  1. a rule registered with `on(pattern, reply)` whose regex is found in the latest user text
     (the last text block of the last user message, `<system-reminder>` text removed: after an
     interrupt Claude Code merges the old prompt, "[Request interrupted by user]" and the new one
     into one message, and only the new one counts);
  2. the last user message carries tool results: "MOCK saw tool result: <first result>", so a
     scripted tool call never loops;
  3. an echo of the conversation it was sent: `MOCK_REPLY #<n> history: user[0]='...' | ...`,
     which proves what the model saw (turn 2 of a resumed session shows turn 1).

Replies stream as Anthropic SSE when the request asks for it (Claude Code always does): text in
`chunk`-sized deltas, thinking, tool_use, HTTP errors with an Anthropic error body, and stalls
(headers and `message_start`, then silence until `release()` or the stall ends). Every request is
recorded, with events telling when its reply finished or its client went away.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

import anyio
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

WAIT_LIMIT = 30.0
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    529: "overloaded_error",
}


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: Mapping[str, Any]


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Content blocks go out in this order: thinking, text, tool_use."""

    text: str | None = None
    thinking: str | None = None
    tool_use: ToolUse | None = None
    error: int | None = None
    error_message: str = "scripted error"
    stall: float = 0.0
    """Seconds of silence after `message_start` (ended early by `AnthropicMock.release()`)."""
    chunk: int = 40
    """Characters per text delta."""
    refusal: Upstream | None = None
    """A provider's refusal, answered as the real API does (refusals.py)."""


@dataclass
class RecordedRequest:
    n: int
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    reply: Reply | None = None
    finished: anyio.Event = field(default_factory=anyio.Event)
    """Set when the whole reply was written."""
    disconnected: anyio.Event = field(default_factory=anyio.Event)
    """Set when the client went away before the reply was complete."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        body = self.body if isinstance(self.body, dict) else {}
        messages = body.get("messages")
        return messages if isinstance(messages, list) else []

    @property
    def model(self) -> str | None:
        return self.body.get("model") if isinstance(self.body, dict) else None

    @property
    def last_user_text(self) -> str:
        return last_user_text(self.messages)

    @property
    def offers_tools(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("tools"))

    @property
    def ends_with_tool_output(self) -> bool:
        return bool(_tool_results(_last_user(self.messages)))

    @property
    def went_away(self) -> bool:
        return self.disconnected.is_set()

    def tool_outputs(self) -> list[str]:
        return [r for m in self.messages if m.get("role") == "user" for r in _tool_results(m)]

    def dump(self) -> str:
        return json.dumps(self.body)

    def history(self) -> str:
        """The dialogue the model was sent, in the echo reply's format."""
        return " | ".join(summarize(self.messages))

    def texts(self, role: str) -> list[str]:
        """Every text block of the messages with `role`, reminders removed."""
        return [
            text
            for message in self.messages
            if message.get("role") == role
            for text in (_clean(t) for t in _texts(message.get("content")))
            if text
        ]


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]


def _clean(text: str) -> str:
    return _REMINDER.sub("", text).strip()


def _clip(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def summarize(messages: list[dict[str, Any]]) -> list[str]:
    """`role[i]='text'` per dialogue message; Claude Code's system-role messages are skipped."""
    parts: list[str] = []
    counts: dict[str, int] = {}
    for message in messages:
        role = str(message.get("role", "?"))
        if role == "system":
            continue
        content = message.get("content")
        pieces = [t for t in (_clean(x) for x in _texts(content)) if t]
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_use":
                    pieces.append(f"<tool_use {block.get('name')}>")
                elif isinstance(block, dict) and block.get("type") == "tool_result":
                    pieces.append("<tool_result>")
        if not pieces:
            continue
        index = counts.get(role, 0)
        counts[role] = index + 1
        parts.append(f"{role}[{index}]='{_clip(' / '.join(pieces))}'")
    return parts


def _last_user(messages: list[dict[str, Any]]) -> dict[str, Any]:
    return next((m for m in reversed(messages) if m.get("role") == "user"), {})


def last_user_text(messages: list[dict[str, Any]]) -> str:
    texts = [t for t in (_clean(x) for x in _texts(_last_user(messages).get("content"))) if t]
    return texts[-1] if texts else ""


def _tool_results(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    results = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            value = block.get("content")
            if isinstance(value, list):
                value = " ".join(x.get("text", "") for x in value if isinstance(x, dict))
            results.append(_clean(str(value)))
    return results


def _rough_tokens(value: Any) -> int:
    return max(1, len(json.dumps(value)) // 4)


class AnthropicMock:
    def __init__(self, *, api_key: str | None = None) -> None:
        """`api_key`: when set, any other `x-api-key` / bearer token gets a 401."""
        self.requests: list[RecordedRequest] = []
        self._api_key = api_key
        self._rules: list[tuple[re.Pattern[str], Reply]] = []
        self.turns = TurnScript()
        """Neutral scripted turns (harness.mock_models.steps); tried before the rules."""
        self._release = anyio.Event()
        self._arrived = anyio.Event()
        self._runner: web.AppRunner | None = None
        self.url = ""

    # ----- scripting -------------------------------------------------------------------------

    def on(self, pattern: str, reply: Reply) -> None:
        """Answer `reply` whenever `pattern` (a regex) is found in the latest user text."""
        self._rules.append((re.compile(pattern, re.S), reply))

    def release(self) -> None:
        """End every stall now and from now on."""
        self._release.set()

    def reset(self) -> None:
        """End every stall, then forget the requests, rules and turns (stalls work again)."""
        self._release.set()
        self._release = anyio.Event()
        self.requests.clear()
        self._rules.clear()
        self.turns.clear()

    @property
    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.requests if r.path.split("?")[0].endswith("/v1/messages")]

    async def wait_for_request(self, n: int) -> RecordedRequest:
        """The `n`th model request (1-based), once it has arrived (TimeoutError after
        `WAIT_LIMIT` s, so a test fails fast instead of at its own timeout)."""
        with anyio.fail_after(WAIT_LIMIT):
            while len(self.model_requests) < n:
                await self._arrived.wait()
        return self.model_requests[n - 1]

    # ----- lifecycle -------------------------------------------------------------------------

    async def __aenter__(self) -> AnthropicMock:
        app = web.Application()
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._not_found)
        # Cancelling the handler when the client goes away is how a stalled reply notices it.
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    # ----- handlers --------------------------------------------------------------------------

    async def _record(self, request: web.Request) -> RecordedRequest:
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode("utf-8", "replace")
        headers = {k.lower(): v for k, v in request.headers.items()}
        for secret in ("x-api-key", "authorization"):
            if secret in headers:
                headers[secret] = headers[secret][:12] + "..."
        recorded = RecordedRequest(
            n=len(self.requests) + 1,
            method=request.method,
            path=request.path_qs,
            headers=headers,
            body=body,
        )
        self.requests.append(recorded)
        arrived, self._arrived = self._arrived, anyio.Event()
        arrived.set()
        return recorded

    def _authorized(self, request: web.Request) -> bool:
        if self._api_key is None:
            return True
        bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
        return self._api_key in (request.headers.get("x-api-key"), bearer)

    async def _not_found(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        recorded.finished.set()
        return _error(404, f"mock: no {request.method} {request.path}")

    async def _count_tokens(self, request: web.Request) -> web.Response:
        recorded = await self._record(request)
        recorded.finished.set()
        messages = recorded.messages
        return web.json_response({"input_tokens": _rough_tokens(messages)})

    def _choose(self, recorded: RecordedRequest) -> Reply:
        step = self.turns.next_step(recorded)
        if step is not None:
            return reply_for(step)
        text = recorded.last_user_text
        for pattern, reply in self._rules:
            if pattern.search(text):
                return reply
        results = _tool_results(_last_user(recorded.messages))
        if results:
            return Reply(text="MOCK saw tool result: " + _clip(results[0], 200))
        n = len(self.model_requests)
        return Reply(text=f"MOCK_REPLY #{n} history: {recorded.history()}")

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request)
        try:
            if not self._authorized(request):
                recorded.reply = Reply(error=401, error_message="invalid x-api-key")
            else:
                recorded.reply = self._choose(recorded)
                await self.turns.hold(recorded)
            response = await self._answer(request, recorded, recorded.reply)
        except BaseException:
            # The handler is cancelled when the client disconnects (handler_cancellation).
            recorded.disconnected.set()
            raise
        recorded.finished.set()
        return response

    async def _answer(
        self, request: web.Request, recorded: RecordedRequest, reply: Reply
    ) -> web.StreamResponse:
        if reply.refusal is not None:
            return refusals.anthropic(reply.refusal)
        if reply.error is not None:
            return _error(reply.error, reply.error_message)
        body = recorded.body if isinstance(recorded.body, dict) else {}
        content = _content(reply)
        model = str(body.get("model", "mock-model"))
        usage = {
            "input_tokens": _rough_tokens(recorded.messages),
            "output_tokens": _rough_tokens(content),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        message = {
            "id": "msg_mock_" + uuid.uuid4().hex[:20],
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": content,
            "stop_reason": "tool_use" if reply.tool_use else "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return web.json_response(message, headers=_request_id())
        response = web.StreamResponse(
            headers={"content-type": "text/event-stream; charset=utf-8", **_request_id()}
        )
        response.enable_chunked_encoding()
        await response.prepare(request)
        for name, data in _sse_events(message, reply):
            if name == "stall":
                with anyio.move_on_after(reply.stall):
                    await self._release.wait()
                continue
            await response.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
        await response.write_eof()
        return response


def reply_for(step: Action) -> Reply:
    """A neutral step in Claude Code's terms (its tools are `Bash` and `Write`)."""
    match step:
        case Say(text):
            return Reply(text=text, chunk=8)
        case Shell(command):
            return Reply(tool_use=ToolUse("Bash", {"command": command, "description": "run it"}))
        case WriteFile(path, content):
            return Reply(tool_use=ToolUse("Write", {"file_path": path, "content": content}))
        case CallTool(name, arguments):
            return Reply(tool_use=ToolUse(name, arguments))
        case Upstream(status, message, refusal):
            refused = refusal != "error"
            return Reply(refusal=step) if refused else Reply(error=status, error_message=message)
        case Hang():
            return Reply(text="never sent", stall=3600)


def _request_id() -> dict[str, str]:
    return {"request-id": "req_mock_" + uuid.uuid4().hex[:12]}


def _error(status: int, message: str) -> web.Response:
    error_type = _ERROR_TYPES.get(status, "api_error")
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    return web.json_response(body, status=status, headers=_request_id())


def _content(reply: Reply) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if reply.thinking:
        content.append({"type": "thinking", "thinking": reply.thinking, "signature": "mock-sig"})
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    if reply.tool_use:
        content.append(
            {
                "type": "tool_use",
                "id": "toolu_mock_" + uuid.uuid4().hex[:16],
                "name": reply.tool_use.name,
                "input": dict(reply.tool_use.input),
            }
        )
    return content


def _sse_events(message: dict[str, Any], reply: Reply) -> Iterator[tuple[str, dict[str, Any]]]:
    """The Anthropic SSE sequence for `message`; a ("stall", {}) marker where it goes silent."""
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}
    if reply.stall:
        yield "stall", {}
    for index, block in enumerate(message["content"]):
        kind = block["type"]
        if kind == "text":
            yield "content_block_start", _block_start(index, {"type": "text", "text": ""})
            text = block["text"]
            step = max(1, reply.chunk)
            for i in range(0, len(text), step):
                yield (
                    "content_block_delta",
                    _delta(index, {"type": "text_delta", "text": text[i : i + step]}),
                )
        elif kind == "thinking":
            empty = {"type": "thinking", "thinking": "", "signature": ""}
            yield "content_block_start", _block_start(index, empty)
            yield (
                "content_block_delta",
                _delta(index, {"type": "thinking_delta", "thinking": block["thinking"]}),
            )
            yield (
                "content_block_delta",
                _delta(index, {"type": "signature_delta", "signature": block["signature"]}),
            )
        else:
            start_block = {
                "type": "tool_use",
                "id": block["id"],
                "name": block["name"],
                "input": {},
            }
            yield "content_block_start", _block_start(index, start_block)
            partial = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield "content_block_delta", _delta(index, partial)
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": usage["output_tokens"]},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _block_start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


__all__ = ["AnthropicMock", "RecordedRequest", "Reply", "ToolUse", "last_user_text", "summarize"]
