"""A scriptable mock of the Gemini API (`generateContent`, `streamGenerateContent`), for
driving the real Gemini CLI offline (it takes the base URL from GOOGLE_GEMINI_BASE_URL).

`GeminiMock` is an aiohttp server on 127.0.0.1, port 0, living in the caller's event loop:

  POST /{version}/models/{model}:streamGenerateContent   (SSE with `alt=sse`, else a JSON array)
  POST /{version}/models/{model}:generateContent
  POST /{version}/models/{model}:countTokens
  GET  /{version}/models                                 (one mock model)

What a request that offers tools is answered with: its scripted step (steps.py: `Say` as text
in small chunks, `Shell` as a `functionCall` of `run_shell_command`, `WriteFile` of
`write_file`, `Upstream` as an HTTP error with a Google error body, `Hang` as one chunk then
silence until the client goes away or `reset()`); with nothing scripted, an acknowledgement
of a function response ("MOCK saw tool result: ...") or an echo of the user's text. A side
request (no tools: the CLI's routing, next-speaker and title checks) gets a short JSON text
that those checks accept. Every request of the agent's main loop is recorded in `requests`
(`GeminiRequest`, with whether its client went away before the reply was complete); the side
requests, which quote the user's text too, are kept apart in `side_requests`, so "the request
that carries this text" is the main loop's.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
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

MODEL = "gemini-2.5-pro"
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    429: "RESOURCE_EXHAUSTED",
}
_ROLE = {"assistant": "model", "model": "model", "user": "user"}
# The CLI's side checks ask for JSON: a next-speaker check wants the user to speak next.
_SIDE_REPLY = json.dumps({"reasoning": "The model answered.", "next_speaker": "user"})


@dataclass
class GeminiRequest:
    """One model request as the mock received it."""

    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    completed: bool = False
    disconnected: bool = False

    @property
    def contents(self) -> list[dict[str, Any]]:
        contents = self.body.get("contents")
        return [c for c in contents if isinstance(c, dict)] if isinstance(contents, list) else []

    @property
    def tool_names(self) -> list[str]:
        names = []
        for tool in self.body.get("tools") or []:
            for declaration in (tool or {}).get("functionDeclarations") or []:
                if isinstance(declaration, dict) and isinstance(declaration.get("name"), str):
                    names.append(declaration["name"])
        return names

    @property
    def offers_tools(self) -> bool:
        return bool(self.tool_names)

    @property
    def model(self) -> str | None:
        """The model of the call's path (`/v1beta/models/MODEL:streamGenerateContent`)."""
        _, found, rest = self.path.partition("/models/")
        return rest.partition(":")[0] or None if found else None

    def texts(self, role: str) -> list[str]:
        """The text of each content of `role` ("assistant" is the API's "model"), its text
        parts joined (the CLI keeps a streamed answer as several parts)."""
        wanted = _ROLE.get(role, role)
        found = []
        for content in self.contents:
            parts = [p.get("text") for p in content.get("parts") or [] if isinstance(p, dict)]
            texts = [t for t in parts if isinstance(t, str) and not _is_thought(content, t)]
            if content.get("role", "user") == wanted and texts:
                found.append("".join(texts))
        return found

    @property
    def last_user_text(self) -> str:
        users = self.texts("user")
        return users[-1] if users else ""

    @property
    def ends_with_tool_output(self) -> bool:
        if not self.contents:
            return False
        parts = self.contents[-1].get("parts") or []
        return any(isinstance(p, dict) and "functionResponse" in p for p in parts)

    @property
    def went_away(self) -> bool:
        return self.disconnected

    def tool_outputs(self) -> list[str]:
        outputs = []
        for content in self.contents:
            for part in content.get("parts") or []:
                if isinstance(part, dict) and "functionResponse" in part:
                    outputs.append(json.dumps(part["functionResponse"].get("response")))
        return outputs

    def dump(self) -> str:
        return json.dumps(self.body)


def _is_thought(content: dict[str, Any], text: str) -> bool:
    return any(
        isinstance(p, dict) and p.get("text") == text and p.get("thought")
        for p in content.get("parts") or []
    )


class GeminiMock:
    """The mock server; an async context manager. `api_key`, when given, is required as the
    `x-goog-api-key` header (or `key` query parameter); any other gets a 401."""

    def __init__(self, *, api_key: str | None = None) -> None:
        self.api_key = api_key
        self.requests: list[GeminiRequest] = []
        self.side_requests: list[GeminiRequest] = []
        self.turns = TurnScript()
        self._release = asyncio.Event()
        self._runner: web.AppRunner | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """What GOOGLE_GEMINI_BASE_URL takes (the SDK adds the API version)."""
        return f"http://127.0.0.1:{self.port}"

    async def __aenter__(self) -> GeminiMock:
        app = web.Application()
        app.router.add_post("/{version}/models/{call}", self._call)
        app.router.add_get("/{version}/models", self._models)
        # handler_cancellation: a client that goes away cancels its handler (how a hang ends).
        self._runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._release.set()
        if self._runner is not None:
            await self._runner.cleanup()

    def reset(self) -> None:
        """Let hanging replies go, then forget the requests and the script."""
        self._release.set()
        self._release = asyncio.Event()
        self.requests.clear()
        self.side_requests.clear()
        self.turns.clear()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"models": [{"name": f"models/{MODEL}"}]})

    def _authorized(self, request: web.Request) -> bool:
        key = request.headers.get("x-goog-api-key") or request.query.get("key")
        return self.api_key is None or key == self.api_key

    async def _call(self, request: web.Request) -> web.StreamResponse:
        _, _, method = request.match_info["call"].partition(":")
        try:
            body = await request.json()
        except ValueError:
            body = {}
        if method == "countTokens":
            return web.json_response({"totalTokens": 10})
        record = GeminiRequest(
            request.path, body if isinstance(body, dict) else {}, dict(request.headers)
        )
        (self.requests if record.offers_tools else self.side_requests).append(record)
        if not self._authorized(request):
            return _error(401, "API key not valid. Please pass a valid API key.")
        step = self.turns.next_step(record)
        try:
            await self.turns.hold(record)
            if isinstance(step, Upstream) and step.refusal != "error":
                return refusals.gemini(step)
            if isinstance(step, Upstream):
                return _error(step.status, step.message)
            stream = method == "streamGenerateContent"
            response = await self._answer(request, record, step, stream=stream)
        except (asyncio.CancelledError, ConnectionError):
            record.disconnected = True
            raise
        record.completed = True
        return response

    async def _answer(
        self, request: web.Request, record: GeminiRequest, step: Action | None, *, stream: bool
    ) -> web.StreamResponse:
        chunks = _chunks(record, step)
        if not stream:
            if isinstance(step, Hang):
                await self._hang()
            parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
            merged = {**chunks[-1], "candidates": [_candidate(_merge(parts), "STOP")]}
            return web.json_response(merged)
        sse = request.query.get("alt") == "sse"
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream" if sse else "application/json"}
        )
        await response.prepare(request)
        if not sse:
            await response.write(json.dumps(chunks).encode())
            await response.write_eof()
            return response
        for chunk in chunks:
            await response.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
            if isinstance(step, Hang):
                await self._hang()
        await response.write_eof()
        return response

    async def _hang(self) -> None:
        await self._release.wait()


def _chunks(record: GeminiRequest, step: Action | None) -> list[dict[str, Any]]:
    """The streamed chunks of the reply to `record` (the last one has the finish reason)."""
    match step:
        case Say(text):
            return _text_chunks(text)
        case Shell(command):
            return [_call("run_shell_command", command=command, description="run it")]
        case WriteFile(path, content):
            return [_call("write_file", file_path=path, content=content)]
        case CallTool(name, arguments):
            return [_chunk([{"functionCall": {"name": name, "args": dict(arguments)}}], "STOP")]
        case Hang():
            return [_chunk([{"text": "Thinking "}], None)]
    return _text_chunks(_default_text(record))


def _default_text(record: GeminiRequest) -> str:
    if not record.offers_tools:
        return _SIDE_REPLY
    if record.ends_with_tool_output:
        outputs = record.tool_outputs()
        return "MOCK saw tool result: " + (outputs[-1] if outputs else "")[:200]
    return "MOCK REPLY: " + record.last_user_text.strip()[:300]


def _call(name: str, **args: str) -> dict[str, Any]:
    return _chunk([{"functionCall": {"name": name, "args": args}}], "STOP")


def _text_chunks(text: str) -> list[dict[str, Any]]:
    words = re.findall(r"\S+\s*", text) or [text]
    return [
        _chunk([{"text": word}], "STOP" if i == len(words) - 1 else None)
        for i, word in enumerate(words)
    ]


def _merge(parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    texts = "".join(p["text"] for p in parts if "text" in p)
    others = [p for p in parts if "text" not in p]
    return ([{"text": texts}] if texts else []) + others


def _candidate(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return candidate


def _chunk(parts: list[dict[str, Any]], finish: str | None) -> dict[str, Any]:
    return {
        "candidates": [_candidate(parts, finish)],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
        "modelVersion": MODEL,
    }


def _error(status: int, message: str) -> web.Response:
    code = _STATUS.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    if status >= 500:  # the provider's own words come first, as Google's do
        message = f"{refusals.GEMINI_5XX} {message}"
    return web.json_response(
        {"error": {"code": status, "message": message, "status": code}}, status=status
    )
