"""One streamed OpenAI chat completions request: the text deltas as they come, and what the
whole reply was (its text, its tool calls, its token counts) once the stream ended."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from core.backend.base import BackendUnavailableError

Message = dict[str, Any]


class ModelError(Exception):
    """The endpoint answered with an HTTP error (`body` is its text: for the log only)."""

    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body[:2000]


@dataclass
class ToolUse:
    call_id: str
    name: str
    arguments: str = ""

    def input(self) -> dict[str, Any]:
        """The arguments as the model meant them ({} when they are not a JSON object)."""
        try:
            value = json.loads(self.arguments or "{}")
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass
class Reply:
    """What one request answered, filled in while it streams."""

    pieces: list[str] = field(default_factory=list)
    calls: dict[int, ToolUse] = field(default_factory=dict)
    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def message(self) -> Message:
        """The reply as the assistant message of the conversation."""
        message: Message = {"role": "assistant", "content": self.text or None}
        if self.calls:
            message["tool_calls"] = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in self.calls.values()
            ]
        return message

    def take(self, chunk: dict[str, Any]) -> str:
        """Fold one streamed chunk in; its text delta ("" when it has none)."""
        usage = chunk.get("usage") or {}
        self.input_tokens += int(usage.get("prompt_tokens", 0))
        self.output_tokens += int(usage.get("completion_tokens", 0))
        choices = chunk.get("choices") or [{}]
        delta = choices[0].get("delta") or {}
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            use = self.calls.get(int(call.get("index", 0)))
            if use is None:
                use = ToolUse(str(call.get("id") or ""), str(function.get("name") or ""))
                self.calls[int(call.get("index", 0))] = use
            use.arguments += str(function.get("arguments") or "")
        text = str(delta.get("content") or "")
        if text:
            self.pieces.append(text)
        return text


async def stream(
    http: aiohttp.ClientSession,
    url: str,
    body: dict[str, Any],
    reply: Reply,
    *,
    api_key: str | None,
) -> AsyncGenerator[str, None]:
    """POST `body` (streamed) to `url`/chat/completions, folding the reply into `reply`; yields
    each text delta. Cancelling the consumer closes the request, which is what stops the model.
    Raises ModelError for an HTTP error, BackendUnavailableError when the endpoint is gone."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    endpoint = f"{url}/chat/completions"
    try:
        async with http.post(endpoint, json={**body, "stream": True}, headers=headers) as response:
            if response.status >= 400:
                raise ModelError(response.status, await response.text())
            async for line in response.content:
                chunk = _data(line)
                if chunk is not None and (text := reply.take(chunk)):
                    yield text
    except (aiohttp.ClientConnectionError, TimeoutError) as exc:
        raise BackendUnavailableError(
            f"{endpoint}: {exc!r}", caller_message="The model endpoint is not reachable."
        ) from exc


def _data(line: bytes) -> dict[str, Any] | None:
    """The JSON of one SSE `data:` line; None for anything else (blank lines, `[DONE]`)."""
    text = line.decode("utf-8", "replace").strip()
    if not text.startswith("data:"):
        return None
    payload = text[5:].strip()
    if payload == "[DONE]":
        return None
    try:
        chunk = json.loads(payload)
    except ValueError:
        return None
    return chunk if isinstance(chunk, dict) else None
