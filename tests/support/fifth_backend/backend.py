"""`FifthBackend`: turns as streamed chat completions, sessions as JSON files."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

import aiohttp
import anyio
from anyio.abc import TaskStatus

from core.backend import (
    BackendEvent,
    Diagnosis,
    Health,
    SessionBound,
    Text,
    TextDelta,
    Turn,
    Usage,
    safe_failure,
)
from core.backend.base import BackendBase, BackendUnavailableError
from core.backend.pool import WarmPool
from tests.support.fifth_backend.config import FifthConfig

Messages = list[dict[str, str]]


class FifthBackend(BackendBase):
    name = "fifth"

    def __init__(self, config: FifthConfig) -> None:
        self.config = config
        self._http: aiohttp.ClientSession | None = None
        self._warm: WarmPool[str, Messages] = WarmPool(
            max_warm=config.max_warm, warm_idle_ms=config.warm_idle
        )
        self._responses: dict[str, aiohttp.ClientResponse] = {}
        self._serving = False

    @property
    def _sessions(self) -> Path:
        home = self.config.home or self.config.working_directory / ".fifth"
        return home.expanduser() / "sessions"

    async def start(self) -> None:
        if not self.config.working_directory.expanduser().is_dir():
            raise BackendUnavailableError(
                f"fifth.workingDirectory {self.config.working_directory} does not exist"
            )
        self._sessions.mkdir(parents=True, exist_ok=True)
        self._http = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=self.config.request_timeout / 1000)
        )

    async def serve(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Forget warm sessions idle for `warmIdle` (they stay on disk)."""
        self._serving = True
        task_status.started()
        try:
            await self._warm.evict_forever(self._forget)
        finally:
            self._serving = False

    async def _forget(self, expired: list[Messages]) -> None:
        return None  # nothing to close: the history is on disk already

    async def aclose(self) -> None:
        self._warm.drain()
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def health(self) -> Health:
        ok = self._http is not None and self._serving
        return Health(ok, f"{len(self._warm)} warm session(s)" if ok else "not started")

    async def diagnose(self) -> list[Diagnosis]:
        return [Diagnosis("model endpoint", True, self.config.base_url)]

    # ----- turns -----------------------------------------------------------------------------

    async def run_turn(self, turn: Turn) -> AsyncIterator[BackendEvent]:
        session_id = turn.session_id or uuid.uuid4().hex
        yield SessionBound(session_id)
        messages = [*self._history(session_id), {"role": "user", "content": turn.text}]
        pieces: list[str] = []
        usage: dict[str, Any] = {}
        try:
            async with aclosing(self._complete(turn.task_id, messages)) as chunks:
                async for delta, reported in chunks:
                    if delta:
                        pieces.append(delta)
                        yield TextDelta(delta)
                    usage.update(reported or {})
        except BackendUnavailableError as exc:
            yield exc.failure(event="fifth.unavailable")
            return
        except _ModelError as exc:
            yield safe_failure(
                "error",
                "The model refused the turn.",
                event="fifth.model_error",
                detail=exc.body,
                status=exc.status,
            )
            return
        finally:
            self._warm.release(session_id)
        answer = "".join(pieces)
        self._save(session_id, [*messages, {"role": "assistant", "content": answer}])
        yield Text(answer)
        if usage:
            yield Usage(
                int(usage.get("prompt_tokens", 0)),
                int(usage.get("completion_tokens", 0)),
                model=self.config.model,
            )

    async def _complete(
        self, task_id: str, messages: Messages
    ) -> AsyncGenerator[tuple[str, dict[str, Any] | None], None]:
        """(text delta, usage) per streamed chunk. Runs in the turn's consumer: cancelling it
        closes the request, which is what stops the model."""
        if self._http is None:
            raise BackendUnavailableError("the fifth backend is not started")
        headers = {"Authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
        body = {"model": self.config.model or "default", "messages": messages, "stream": True}
        url = f"{self.config.base_url}/chat/completions"
        try:
            async with self._http.post(url, json=body, headers=headers) as response:
                if response.status >= 400:
                    raise _ModelError(response.status, await response.text())
                self._responses[task_id] = response
                try:
                    async for line in response.content:
                        chunk = _data(line)
                        if chunk is None:
                            continue
                        choices = chunk.get("choices") or [{}]
                        delta = (choices[0].get("delta") or {}).get("content") or ""
                        yield delta, chunk.get("usage")
                finally:
                    self._responses.pop(task_id, None)
        except (aiohttp.ClientConnectionError, TimeoutError) as exc:
            raise BackendUnavailableError(
                f"{url}: {exc!r}", caller_message="The model endpoint is not reachable."
            ) from exc

    async def interrupt(self, turn: Turn) -> None:
        """Close the turn's request if its consumer has not already (then the model stops)."""
        response = self._responses.pop(turn.task_id, None)
        if response is not None:
            response.close()

    async def drop_session(self, session_id: str) -> None:
        self._warm.remove(session_id)
        self._file(session_id).unlink(missing_ok=True)

    # ----- sessions --------------------------------------------------------------------------

    def _file(self, session_id: str) -> Path:
        return self._sessions / f"{uuid.UUID(hex=session_id).hex}.json"

    def _history(self, session_id: str) -> Messages:
        warm = self._warm.take(session_id)
        if warm is not None:
            return warm
        try:
            history: Messages = json.loads(self._file(session_id).read_text())
        except (OSError, ValueError):
            history = []
        if not history and self.config.system_prompt:
            history = [{"role": "system", "content": self.config.system_prompt}]
        self._warm.add(session_id, history)
        return history

    def _save(self, session_id: str, messages: Messages) -> None:
        self._file(session_id).write_text(json.dumps(messages))
        self._warm.add(session_id, messages, busy=False)


class _ModelError(Exception):
    def __init__(self, status: int, body: str) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body[:2000]


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
