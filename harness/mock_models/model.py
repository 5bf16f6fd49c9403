"""One lifecycle and one scripting API over the four mock model servers.

`MockModel(kind)` runs the mock of that wire format (`anthropic`: Claude Code's Messages API;
`openai_responses`: Codex's Responses API; `openai_chat`: chat completions, for OpenCode,
Copilot and any OpenAI-compatible agent; `gemini`: the Gemini API, for Gemini CLI) on
127.0.0.1, port 0, in a thread with an event loop of its own, so one mock can serve a whole
module of tests (and the real daemons they start) whatever event loop, if any, each test runs
in:

    with MockModel("openai_chat") as model:
        model.script([Shell("echo waiting && sleep 1000")])   # neutral steps (steps.py)
        ... point the agent at model.url ...
        request = model.wait_for_request(lambda r: "hello" in r.last_user_text)
        assert "PAPAYA" in request.dump()

`requests` are the model requests the agent sent, oldest first, in neutral terms
(`steps.ModelRequest`); `reset()` forgets them and the script between tests.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from types import TracebackType
from typing import Literal, Protocol, TypeVar

from harness.mock_models.anthropic import AnthropicMock
from harness.mock_models.gemini import GeminiMock
from harness.mock_models.openai_chat import OpenAIChatMock
from harness.mock_models.openai_responses import ResponsesMock
from harness.mock_models.steps import ModelRequest, Turn, TurnScript

MockKind = Literal["anthropic", "openai_responses", "openai_chat", "gemini"]
WAIT_LIMIT = 30.0
T = TypeVar("T")


class _Server(Protocol):
    turns: TurnScript

    def reset(self) -> None: ...


class MockModel:
    """A mock model server of one wire format, started by `with` (or `start()` / `stop()`)."""

    def __init__(self, kind: MockKind, *, api_key: str | None = None) -> None:
        """`api_key`: when set, the mock answers any other key with a 401, as the real APIs do."""
        self.kind = kind
        self.api_key = api_key
        self.url = ""
        """The base URL the agent takes (Anthropic: without /v1; the OpenAI ones: with it)."""
        self._server: _Server | None = None
        self._requests: Callable[[], list[ModelRequest]] = list
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread: threading.Thread | None = None

    # ----- lifecycle ---------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"mock-{self.kind}", daemon=True)
        self._thread.start()
        if not self._ready.wait(WAIT_LIMIT) or self._failure is not None:
            raise RuntimeError(f"the {self.kind} mock did not start") from self._failure

    def stop(self) -> None:
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(WAIT_LIMIT)
            self._thread = None

    def __enter__(self) -> MockModel:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._serve())
        except BaseException as exc:  # noqa: BLE001 - handed to start(), which raises it
            self._failure = exc
            self._ready.set()

    async def _serve(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        async with self._running():
            self._ready.set()
            await self._stop.wait()

    @contextlib.asynccontextmanager
    async def _running(self) -> AsyncIterator[None]:
        if self.kind == "anthropic":
            async with AnthropicMock(api_key=self.api_key) as anthropic:
                self._server, self.url = anthropic, anthropic.url
                self._requests = lambda: list(anthropic.model_requests)
                yield
        elif self.kind == "openai_responses":
            async with ResponsesMock.running() as responses:
                self._server, self.url = responses, responses.base_url
                self._requests = lambda: list(responses.requests)
                yield
        elif self.kind == "gemini":
            async with GeminiMock(api_key=self.api_key) as gemini:
                self._server, self.url = gemini, gemini.url
                self._requests = lambda: list(gemini.requests)
                yield
        else:
            async with OpenAIChatMock(api_key=self.api_key) as chat:
                self._server, self.url = chat, chat.base_url
                self._requests = lambda: list(chat.requests)
                yield

    # ----- scripting ---------------------------------------------------------------------------

    @property
    def _running_server(self) -> _Server:
        assert self._server is not None, "the mock is not running"
        return self._server

    def script(self, *turns: Turn) -> None:
        """The model's next turns, each a list of steps (steps.py says how requests match)."""
        self._running_server.turns.add(*turns)

    def release(self) -> None:
        """Answer every request a `Hold` step holds (steps.py)."""
        self._running_server.turns.release()

    def reset(self) -> None:
        """Let every hanging reply go, then forget the requests and the script."""
        server = self._running_server
        assert self._loop is not None
        done = threading.Event()

        def reset() -> None:
            server.reset()
            done.set()

        self._loop.call_soon_threadsafe(reset)
        assert done.wait(WAIT_LIMIT), "the mock's loop did not answer"

    @property
    def requests(self) -> list[ModelRequest]:
        """The model requests so far, oldest first."""
        return self._requests()

    def tool_requests(self) -> list[ModelRequest]:
        """The requests of the agent's main loop (those that offer tools)."""
        return [r for r in self.requests if r.offers_tools]

    def wait_for_request(
        self, matches: Callable[[ModelRequest], bool], *, timeout: float = WAIT_LIMIT
    ) -> ModelRequest:
        """The first request that `matches`, once it arrived (polled with a deadline)."""
        return self.wait_until(lambda: next(filter(matches, self.requests), None), timeout)

    def wait_until(self, found: Callable[[], T | None], timeout: float = WAIT_LIMIT) -> T:
        """What `found()` returns once it is not None (polled with a deadline)."""
        deadline = time.monotonic() + timeout
        while (value := found()) is None:
            assert time.monotonic() < deadline, f"the {self.kind} mock never saw it"
            time.sleep(0.05)
        return value
