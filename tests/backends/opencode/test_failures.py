"""The Failed contract on the OpenCode backend's HTTP error path, without the real CLI: attached
(`serverUrl`) to a small server that answers OpenCode's HTTP API and refuses the prompt with a
body that quotes a key. The caller gets a sentence and an error id; the log has the body."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer

from core.backend import Failed, SessionBound
from core.backend.base import serving
from tests.support.errors import SECRET, assert_logged_safely, one_turn
from wrappers.opencode.backend import OpencodeBackend
from wrappers.opencode.config import OpencodeConfig


def _refusing_opencode(closing: anyio.Event) -> web.Application:
    """OpenCode's routes as the backend uses them; `prompt_async` fails like a proxy would."""

    async def health(_: web.Request) -> web.Response:
        return web.json_response({"healthy": True, "version": "0.0.0-fake"})

    async def providers(_: web.Request) -> web.Response:
        return web.json_response({"providers": [], "default": {}})

    async def create_session(_: web.Request) -> web.Response:
        return web.json_response({"id": "ses_fake"})

    async def prompt(_: web.Request) -> web.Response:
        body = json.dumps({"error": {"message": f"upstream rejected the request: {SECRET}"}})
        return web.Response(status=502, text=body, content_type="application/json")

    async def events(request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        await response.write(b'data: {"type": "server.connected", "properties": {}}\n\n')
        await closing.wait()  # held open, like OpenCode's own stream
        return response

    app = web.Application()
    app.router.add_get("/global/health", health)
    app.router.add_get("/config/providers", providers)
    app.router.add_post("/session", create_session)
    app.router.add_post("/session/{id}/prompt_async", prompt)
    app.router.add_get("/event", events)
    return app


@pytest.fixture
async def opencode_url() -> AsyncIterator[str]:
    closing = anyio.Event()
    server = TestServer(_refusing_opencode(closing), host="127.0.0.1", port=0)
    await server.start_server()
    try:
        yield str(server.make_url("")).rstrip("/")
    finally:
        closing.set()
        await server.close()


async def test_a_refused_prompt_fails_with_a_sentence_and_the_body_goes_to_the_log(
    opencode_url: str, tmp_path: Path
) -> None:
    backend = OpencodeBackend(
        OpencodeConfig(working_directory=tmp_path, server_url=opencode_url, model="mock/model")
    )
    async with serving(backend):  # start, and serve (attach to the server) in a task group
        events, logs = await one_turn(backend)

    assert events[0] == SessionBound("ses_fake")
    failed = events[-1]
    assert isinstance(failed, Failed)
    assert failed.message.startswith("OpenCode refused the prompt. The daemon log has")
    entry = assert_logged_safely(failed.message, logs)
    assert entry["event"] == "opencode.prompt.refused"
