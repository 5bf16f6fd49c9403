"""A scriptable OpenAI Chat Completions server for backend e2e tests (OpenCode, Copilot).

Serves on 127.0.0.1, port 0, in the test's own event loop:

  POST /v1/chat/completions   (also /chat/completions): SSE when `stream` is true, JSON otherwise
  GET  /v1/models             (also /models)

Every chat request is recorded as a `ChatRequest` (body, headers, what was answered, whether the
client went away mid-reply), so a test can assert what the model saw.

What it answers, first match wins:
  1. a rule added with `reply(...)` whose `when` matches (a substring of the user's text when the
     request ends with a user message, so a tool result that follows does not match again; or a
     predicate on the request); a rule with `times` is used that many times, then dropped;
  2. the built-in rules on the last user text (clients wrap prompts in extra text, so
     directives are searched anywhere in it):
       last message is a tool result      -> "TOOL RESULT SEEN: <first 200 chars>"
       `MOCK_TOOL <name> {json}`          -> one call to tool <name> (when the request offers it)
       `MOCK_ERROR <status>`              -> that HTTP error, every time
       `MOCK_STALL`                       -> headers and one chunk, then nothing until released
       `MOCK_SLOW <seconds>`              -> 20 chunks spread over that time
       `the secret word is X`             -> "Noted. The secret word is X."
       `what was the secret word?`        -> searches the EARLIER messages of the request:
                                             "The secret word was X." / "I was never told a
                                             secret word." (proves a turn saw the earlier ones)
       a request without tools that asks for a title -> "Mock session title"
       anything else                      -> "MOCK REPLY: <the user's text>"

Usage:

    async with OpenAIChatMock() as mock:
        mock.reply(TextReply("hello there"), when="greet me")
        ...  # point the agent at mock.base_url ("http://127.0.0.1:<port>/v1")
        request = await mock.wait_for_request(lambda r: "greet me" in r.last_user_text)
        assert request.roles == ["system", "user"]

A scripted `Say` streams one word every 15 ms (`SAY_CHUNK_DELAY`), as a model does over time.
Streamed replies end with a `finish_reason` chunk, then a usage chunk (token counts are word
counts, never zero), then `data: [DONE]`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

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

MODEL = "mock-model"
# A scripted `Say` streams over time, as a model does: an agent that forwards what it has read
# so far (Antigravity's runtime does, when loaded) would otherwise get the words all at once.
SAY_CHUNK_DELAY = 0.015

_SECRET_SET = re.compile(r"secret word(?: is|:|=)\s*[\"']?([A-Za-z0-9_-]+)", re.I)
_SECRET_ASK = re.compile(r"(what|which|tell me|repeat)[^.?!]*secret word", re.I)
_TOOL = re.compile(r"MOCK_TOOL\s+([A-Za-z0-9_.:-]+)\s*(\{.*\})?", re.S)
_ERROR = re.compile(r"MOCK_ERROR\s+([0-9]{3})")
_SLOW = re.compile(r"MOCK_SLOW\s+([0-9.]+)")
_STALL = "MOCK_STALL"
_TITLE = re.compile(r"\btitle\b", re.I)
_COMMAND_DIRECTORY = re.compile(r"Command Working Directory: (\S+)")
_USER_REQUEST = re.compile(r"<USER_REQUEST>\n?(.*?)\n?</USER_REQUEST>", re.S)


# ----- replies ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TextReply:
    """A text answer, streamed one word (with its trailing space) per chunk."""

    text: str
    chunk_delay: float = 0.0
    finish_reason: str = "stop"


@dataclass(frozen=True)
class ToolCallReply:
    """One call to `name` (the request must offer a tool of that name for clients to run it)."""

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    call_id: str | None = None


@dataclass(frozen=True)
class ErrorReply:
    """An HTTP error with an OpenAI-style error body (`{"error": {"message", "type", "code"}}`)."""

    status: int
    message: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    refusal: Upstream | None = None
    """A provider's refusal, answered as the real API does (refusals.py)."""


@dataclass(frozen=True)
class StallReply:
    """Send `before` (may be empty), then nothing until `release_stalls()` or the client goes
    away; once released, send `after` and finish normally. A non-streaming request stalls
    before any byte."""

    before: str = ""
    after: str = ""


Reply = TextReply | ToolCallReply | ErrorReply | StallReply


# ----- recorded requests -----------------------------------------------------------------------


def content_text(content: Any) -> str:
    """Flatten an OpenAI message content (a string or a list of parts) to text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                value = part.get("text", part.get("content"))
                if isinstance(value, str):
                    texts.append(value)
        return "\n".join(texts)
    return str(content)


@dataclass
class ChatRequest:
    """One chat completions request as the mock received it, and what became of it."""

    seq: int
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    received_at: float
    reply: Reply | None = None
    completed: bool = False
    disconnected: bool = False

    @property
    def messages(self) -> list[dict[str, Any]]:
        messages = self.body.get("messages")
        return [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else []

    @property
    def roles(self) -> list[str]:
        return [str(m.get("role")) for m in self.messages]

    @property
    def stream(self) -> bool:
        return bool(self.body.get("stream"))

    @property
    def model(self) -> str | None:
        model = self.body.get("model")
        return model if isinstance(model, str) else None

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            if not isinstance(tool, dict):
                continue
            function = tool.get("function")
            name = function.get("name") if isinstance(function, dict) else tool.get("name")
            if isinstance(name, str):
                names.append(name)
        return names

    @property
    def authorization(self) -> str | None:
        return self.headers.get("authorization")

    def texts(self, role: str) -> list[str]:
        """The text of every message with `role`, in order (a user's text out of the envelope
        some agents wrap it in, Antigravity's `<USER_REQUEST>`)."""
        texts = [content_text(m.get("content")) for m in self.messages if m.get("role") == role]
        return [_unwrapped(t) for t in texts] if role == "user" else texts

    @property
    def system_text(self) -> str:
        return "\n".join(self.texts("system") + self.texts("developer"))

    @property
    def last_user_text(self) -> str:
        users = self.texts("user")
        return users[-1] if users else ""

    @property
    def last_role(self) -> str | None:
        return self.roles[-1] if self.messages else None

    @property
    def offers_tools(self) -> bool:
        return bool(self.tool_names)

    @property
    def ends_with_tool_output(self) -> bool:
        return self.last_role == "tool"

    @property
    def went_away(self) -> bool:
        return self.disconnected

    def tool_outputs(self) -> list[str]:
        return self.texts("tool")

    def dump(self) -> str:
        return json.dumps(self.body)

    @property
    def transcript(self) -> str:
        """Every message's text (and tool call arguments), one per line: for "did the model
        see X anywhere" assertions."""
        lines = []
        for message in self.messages:
            lines.append(content_text(message.get("content")))
            for call in message.get("tool_calls") or []:
                if isinstance(call, dict):
                    lines.append(json.dumps(call.get("function")))
        return "\n".join(lines)


Matcher = str | Callable[[ChatRequest], bool]
Responder = Callable[[ChatRequest], Reply | None]


@dataclass
class _Rule:
    reply: Reply | Responder
    when: Matcher | None
    times: int | None

    def matches(self, request: ChatRequest) -> bool:
        if self.when is None:
            return True
        if isinstance(self.when, str):
            return request.last_role == "user" and self.when in request.last_user_text
        return self.when(request)


def default_reply(request: ChatRequest) -> Reply:
    """The built-in rules (module docstring)."""
    messages = request.messages
    if messages and messages[-1].get("role") == "tool":
        return TextReply("TOOL RESULT SEEN: " + content_text(messages[-1].get("content"))[:200])
    return _directive_reply(request) or _conversation_reply(request)


def _directive_reply(request: ChatRequest) -> Reply | None:
    text = request.last_user_text
    if match := _ERROR.search(text):
        return ErrorReply(int(match.group(1)))
    if (match := _TOOL.search(text)) and match.group(1) in request.tool_names:
        arguments = match.group(2) or "{}"
        try:
            json.loads(arguments)
        except ValueError:
            arguments = "{}"
        return ToolCallReply(match.group(1), arguments)
    if _STALL in text:
        return StallReply(before="Thinking ")
    if match := _SLOW.search(text):
        return TextReply(" ".join(["slow"] * 20), chunk_delay=float(match.group(1)) / 20)
    return None


def _conversation_reply(request: ChatRequest) -> Reply:
    text = request.last_user_text
    asks_secret = _SECRET_ASK.search(text) is not None
    wants_title = _TITLE.search(request.system_text + " " + text[:400]) is not None
    if not request.tool_names and wants_title and not asks_secret:
        return TextReply("Mock session title")
    if match := _SECRET_SET.search(text):
        return TextReply(f"Noted. The secret word is {match.group(1)}.")
    if not asks_secret:
        return TextReply("MOCK REPLY: " + text.strip()[:500])
    found = None
    for earlier in request.texts("user")[:-1] + request.texts("assistant"):
        if seen := _SECRET_SET.search(earlier):
            found = seen.group(1)
    if found:
        return TextReply(f"The secret word was {found}.")
    return TextReply("I was never told a secret word.")


# ----- the server ------------------------------------------------------------------------------


class OpenAIChatMock:
    """The mock server; an async context manager (or `start()` / `close()`).

    Runs in the caller's event loop. `api_key`, when given, is required as `Bearer <key>` (a
    wrong or missing key gets 401 like the real API).
    """

    def __init__(
        self, *, model: str = MODEL, api_key: str | None = None, chunk_delay: float = 0.0
    ) -> None:
        self.model = model
        self.api_key = api_key
        self.chunk_delay = chunk_delay
        self.requests: list[ChatRequest] = []
        self._rules: list[_Rule] = []
        self.turns = TurnScript()
        """Neutral scripted turns (harness.mock_models.steps); tried before the rules."""
        self._changed = asyncio.Condition()
        self._release = asyncio.Event()
        self._closing = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    # ----- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        app = web.Application()
        for prefix in ("/v1", ""):
            app.router.add_post(prefix + "/chat/completions", self._chat)
            app.router.add_get(prefix + "/models", self._models)
        # handler_cancellation: a client that goes away cancels its handler, which is how a
        # stalled reply notices an abort.
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> OpenAIChatMock:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        """The OpenAI base URL clients take (`.../v1`)."""
        return f"http://127.0.0.1:{self.port}/v1"

    # ----- scripting ---------------------------------------------------------------------------

    def reply(
        self, reply: Reply | Responder, *, when: Matcher | None = None, times: int | None = None
    ) -> None:
        """Answer requests that match `when` with `reply` (or what a responder returns; None
        falls through). `when` is a substring of the last message when that is the user's, or a
        predicate on the request; None matches every request. Rules are tried in the order they
        were added; `times` limits how often one applies."""
        self._rules.append(_Rule(reply, when, times))

    def release_stalls(self) -> None:
        """Let every stalled reply (now and later) go on."""
        self._release.set()

    def reset(self) -> None:
        """Let stalled replies go on, then forget the recorded requests, rules and turns."""
        self._release.set()
        self._release = asyncio.Event()
        self.requests.clear()
        self._rules.clear()
        self.turns.clear()

    def matching(self, predicate: Matcher) -> list[ChatRequest]:
        """The recorded requests that match `predicate` (as `when` in `reply`)."""
        rule = _Rule(TextReply(""), predicate, None)
        return [r for r in self.requests if rule.matches(r)]

    async def wait_for_request(
        self, predicate: Matcher | None = None, *, count: int = 1, within: float = 30.0
    ) -> ChatRequest:
        """Wait until `count` recorded requests match; returns the last of them."""
        rule = _Rule(TextReply(""), predicate, None)
        async with asyncio.timeout(within), self._changed:
            while True:
                found = [r for r in self.requests if rule.matches(r)]
                if len(found) >= count:
                    return found[count - 1]
                await self._changed.wait()

    async def wait_until(self, condition: Callable[[], bool], *, within: float = 30.0) -> None:
        """Wait until `condition()` holds; it is re-checked whenever a request arrives or
        finishes (e.g. `lambda: request.disconnected`)."""
        async with asyncio.timeout(within), self._changed:
            await self._changed.wait_for(condition)

    # ----- handlers ----------------------------------------------------------------------------

    def _choose(self, request: ChatRequest) -> Reply:
        step = self.turns.next_step(request)
        if step is not None:
            return reply_for(step, request)
        for rule in list(self._rules):
            if not rule.matches(request):
                continue
            reply = rule.reply(request) if callable(rule.reply) else rule.reply
            if reply is None:
                continue
            if rule.times is not None:
                rule.times -= 1
                if rule.times <= 0:
                    self._rules.remove(rule)
            return reply
        return default_reply(request)

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "object": "list",
                "data": [{"id": self.model, "object": "model", "created": 0, "owned_by": "mock"}],
            }
        )

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except ValueError:
            body = None
        record = ChatRequest(
            seq=len(self.requests) + 1,
            path=request.path,
            headers={k.lower(): v for k, v in request.headers.items()},
            body=body if isinstance(body, dict) else {},
            received_at=time.monotonic(),
        )
        if self.api_key is not None and record.authorization != f"Bearer {self.api_key}":
            record.reply = ErrorReply(401, "Incorrect API key provided")
        elif not isinstance(body, dict):
            record.reply = ErrorReply(400, "the body is not a JSON object")
        else:
            record.reply = self._choose(record)
        self.requests.append(record)
        await self._notify()
        try:
            await self.turns.hold(record)
            response = await self._answer(request, record, record.reply)
        except (asyncio.CancelledError, ConnectionError):
            record.disconnected = True
            await asyncio.shield(self._notify())
            raise
        record.completed = True
        await self._notify()
        return response

    async def _answer(
        self, request: web.Request, record: ChatRequest, reply: Reply
    ) -> web.StreamResponse:
        if isinstance(reply, ErrorReply) and reply.refusal is not None:
            return refusals.openai(reply.refusal, record.model or self.model)
        if isinstance(reply, ErrorReply):
            kind = "invalid_request_error" if reply.status < 500 else "server_error"
            message = reply.message or f"mock error {reply.status}"
            if reply.status >= 500:  # the provider's own words come first, as OpenAI's do
                message = f"{refusals.OPENAI_5XX} {message}"
            error = {"message": message, "type": kind}
            return web.json_response(
                {"error": {**error, "code": reply.status}},
                status=reply.status,
                headers=dict(reply.headers),
            )
        if not record.stream:
            if isinstance(reply, StallReply):
                await self._stall()
            return web.json_response(self._completion(record, reply))
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        stream = _Stream(response, record, self.model)
        await stream.send({"role": "assistant", "content": ""})
        if isinstance(reply, ToolCallReply):
            await stream.tool_call(reply)
        elif isinstance(reply, StallReply):
            await stream.words(reply.before, self.chunk_delay)
            await self._stall()
            await stream.words(reply.after, self.chunk_delay)
            await stream.finish("stop", reply.before + reply.after)
        else:
            await stream.words(reply.text, reply.chunk_delay or self.chunk_delay)
            await stream.finish(reply.finish_reason, reply.text)
        await response.write_eof()
        return response

    async def _stall(self) -> None:
        release, closing = self._release, self._closing
        waiters = [asyncio.ensure_future(release.wait()), asyncio.ensure_future(closing.wait())]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _completion(self, record: ChatRequest, reply: Reply) -> dict[str, Any]:
        if isinstance(reply, ToolCallReply):
            message: dict[str, Any] = {
                "role": "assistant",
                "content": None,
                "tool_calls": [_tool_call(reply)],
            }
            finish, completion_tokens = "tool_calls", 5
        else:
            text = _reply_text(reply)
            message = {"role": "assistant", "content": text}
            finish, completion_tokens = "stop", _words(text)
        return {
            "id": "chatcmpl-mock-" + uuid.uuid4().hex[:12],
            "object": "chat.completion",
            "created": int(time.time()),
            "model": record.model or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": _usage(record, completion_tokens),
        }


def reply_for(step: Action, request: ChatRequest) -> Reply:
    """A neutral step in the terms of the tools `request` offers (OpenCode writes with `write`,
    Copilot with `create`; both run commands with `bash`; Antigravity has its own names)."""
    match step:
        case Say(text):
            return TextReply(text, chunk_delay=SAY_CHUNK_DELAY)
        case Shell(command):
            return _shell(command, request)
        case WriteFile(path, content):
            return _write(path, content, request)
        case CallTool(name, arguments):
            return ToolCallReply(name, dict(arguments))
        case Upstream(status, message, refusal):
            if refusal != "error":
                step_reply = ErrorReply(status, message, refusal=step)
            else:  # Retry at once: clients honour these, so a retried error stays fast.
                fast = {"retry-after": "0", "retry-after-ms": "10"}
                step_reply = ErrorReply(status, message, headers=fast)
            return step_reply
        case Hang():
            return StallReply(before="Thinking ")


def _shell(command: str, request: ChatRequest) -> ToolCallReply:
    if "run_command" in request.tool_names:  # Antigravity: it needs the directory too
        return ToolCallReply("run_command", {"CommandLine": command, "Cwd": _cwd(request)})
    return ToolCallReply("bash", {"command": command, "description": "run it"})


def _write(path: str, content: str, request: ChatRequest) -> ToolCallReply:
    if "write_to_file" in request.tool_names:  # Antigravity: Overwrite is required
        arguments = {"TargetFile": path, "CodeContent": content, "Overwrite": True}
        return ToolCallReply("write_to_file", {**arguments, "Description": "write it"})
    if "write" in request.tool_names:
        return ToolCallReply("write", {"filePath": path, "content": content})
    return ToolCallReply("create", {"path": path, "file_text": content})


def _cwd(request: ChatRequest) -> str:
    """The command directory Antigravity names in its system prompt (its shell tool needs one)."""
    found = _COMMAND_DIRECTORY.search(request.system_text)
    return found.group(1) if found else "."


def _unwrapped(text: str) -> str:
    found = _USER_REQUEST.search(text)
    return found.group(1) if found else text


def _reply_text(reply: Reply) -> str:
    if isinstance(reply, TextReply):
        return reply.text
    if isinstance(reply, StallReply):
        return reply.before + reply.after
    return ""


def _words(text: str) -> int:
    return max(len(text.split()), 1)


def _usage(record: ChatRequest, completion_tokens: int) -> dict[str, int]:
    prompt_tokens = sum(_words(content_text(m.get("content"))) for m in record.messages)
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def _tool_call(reply: ToolCallReply) -> dict[str, Any]:
    arguments = (
        reply.arguments if isinstance(reply.arguments, str) else json.dumps(dict(reply.arguments))
    )
    return {
        "id": reply.call_id or "call_" + uuid.uuid4().hex[:16],
        "type": "function",
        "function": {"name": reply.name, "arguments": arguments},
    }


class _Stream:
    """The SSE chunks of one streamed completion."""

    def __init__(self, response: web.StreamResponse, record: ChatRequest, model: str) -> None:
        self._response = response
        self._record = record
        self._id = "chatcmpl-mock-" + uuid.uuid4().hex[:12]
        self._created = int(time.time())
        self._model = record.model or model

    def _chunk(self, choices: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": choices,
            **extra,
        }

    async def _write(self, payload: dict[str, Any] | str) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        await self._response.write(f"data: {data}\n\n".encode())

    async def send(self, delta: dict[str, Any], finish_reason: str | None = None) -> None:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        await self._write(self._chunk([choice]))

    async def words(self, text: str, delay: float) -> None:
        for word in re.findall(r"\S+\s*", text):
            await self.send({"content": word})
            if delay:
                await asyncio.sleep(delay)

    async def tool_call(self, reply: ToolCallReply) -> None:
        call = _tool_call(reply)
        function = call["function"]
        head = {**call, "function": {"name": function["name"], "arguments": ""}}
        await self.send({"tool_calls": [{"index": 0, **head}]})
        await self.send(
            {"tool_calls": [{"index": 0, "function": {"arguments": function["arguments"]}}]}
        )
        await self.finish("tool_calls", completion_tokens=5)

    async def finish(
        self, reason: str, text: str = "", *, completion_tokens: int | None = None
    ) -> None:
        await self.send({}, reason)
        usage = _usage(self._record, completion_tokens or _words(text))
        await self._write(self._chunk([], usage=usage))
        await self._write("[DONE]")
