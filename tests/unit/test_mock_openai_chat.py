"""The OpenAI chat completions mock speaks the wire format its clients parse."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from harness.mock_models.gemini import GeminiRequest
from harness.mock_models.openai_chat import (
    ChatRequest,
    ErrorReply,
    OpenAIChatMock,
    StallReply,
    TextReply,
    ToolCallReply,
)
from harness.mock_models.openai_responses import RecordedRequest as ResponsesRequest
from harness.mock_models.refusals import OPENAI_5XX
from harness.mock_models.steps import Hold, Say

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]


def chat(text: str, *, stream: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "model": "mock-model",
        "stream": stream,
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": text}],
        **extra,
    }


async def post(
    session: aiohttp.ClientSession, mock: OpenAIChatMock, body: dict[str, Any], **kw: Any
) -> tuple[int, Any]:
    """POST a completion; a stream comes back as its list of chunks (without [DONE])."""
    async with session.post(f"{mock.base_url}/chat/completions", json=body, **kw) as response:
        if response.content_type != "text/event-stream":
            return response.status, await response.json()
        chunks = []
        async for raw in response.content:
            line = raw.decode().strip()
            if line.startswith("data: ") and line != "data: [DONE]":
                chunks.append(json.loads(line[len("data: ") :]))
        return response.status, chunks


def streamed_text(chunks: Any) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


async def test_streams_text_word_by_word_then_finish_and_usage() -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        mock.reply(TextReply("one two three"), when="count")
        status, chunks = await post(session, mock, chat("please count"))
    assert status == 200
    assert isinstance(chunks, list)
    contents = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert contents == ["", "one ", "two ", "three", None]
    assert streamed_text(chunks) == "one two three"
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["completion_tokens"] == 3
    (request,) = mock.requests
    assert request.roles == ["system", "user"]
    assert request.last_user_text == "please count"
    assert request.completed
    assert not request.disconnected


async def test_non_streaming_request_gets_one_completion() -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        status, body = await post(session, mock, chat("hello", stream=False))
    assert status == 200
    assert isinstance(body, dict)
    assert body["choices"][0]["message"] == {"role": "assistant", "content": "MOCK REPLY: hello"}
    assert body["usage"]["prompt_tokens"] > 0


async def test_tool_call_is_streamed_in_two_pieces() -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        mock.reply(ToolCallReply("bash", {"command": "ls"}, call_id="call_1"), times=1)
        _, chunks = await post(session, mock, chat("list files", tools=TOOLS))
        _, after = await post(session, mock, chat("list files", tools=TOOLS))
    calls = [c["choices"][0]["delta"].get("tool_calls") for c in chunks if c["choices"]]
    head, tail = [c[0] for c in calls if c]
    assert head["id"] == "call_1"
    assert head["function"] == {"name": "bash", "arguments": ""}
    assert json.loads(tail["function"]["arguments"]) == {"command": "ls"}
    assert isinstance(chunks, list)
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    # `times=1`: the second request falls through to the default rules.
    assert streamed_text(after) == "MOCK REPLY: list files"
    assert mock.requests[0].tool_names == ["bash"]


async def test_default_rules_answer_directives_and_remember_secrets() -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        _, noted = await post(session, mock, chat("the secret word is KIWI"))
        history = {
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "the secret word is KIWI"}]},
                {"role": "assistant", "content": "Noted."},
                {"role": "user", "content": "What was the secret word?"},
            ],
            "stream": True,
        }
        _, recalled = await post(session, mock, history)
        _, tool = await post(session, mock, chat('MOCK_TOOL bash {"command": "pwd"}', tools=TOOLS))
        result = {"messages": [{"role": "tool", "content": "/work/dir"}], "stream": True}
        _, seen = await post(session, mock, result)
        status, error = await post(session, mock, chat("MOCK_ERROR 503"))
    assert streamed_text(noted) == "Noted. The secret word is KIWI."
    assert streamed_text(recalled) == "The secret word was KIWI."
    assert isinstance(tool, list)
    assert any(c["choices"] and c["choices"][0]["delta"].get("tool_calls") for c in tool)
    assert streamed_text(seen) == "TOOL RESULT SEEN: /work/dir"
    assert status == 503
    assert isinstance(error, dict)
    assert error["error"]["code"] == 503


@pytest.mark.parametrize("status", [401, 500])
async def test_scripted_errors(status: int) -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        mock.reply(ErrorReply(status, "nope", headers={"Retry-After": "0"}))
        code, body = await post(session, mock, chat("anything"))
    assert code == status
    # A 5xx begins with OpenAI's own words for its failure (refusals.OPENAI_5XX).
    said = "nope" if status < 500 else f"{OPENAI_5XX} nope"
    assert body == {
        "error": {
            "message": said,
            "type": "invalid_request_error" if status < 500 else "server_error",
            "code": status,
        }
    }


async def test_api_key_is_enforced_when_set() -> None:
    async with OpenAIChatMock(api_key="k-1") as mock, aiohttp.ClientSession() as session:
        bad, _ = await post(session, mock, chat("hi"))
        good, _ = await post(session, mock, chat("hi"), headers={"Authorization": "Bearer k-1"})
    assert (bad, good) == (401, 200)
    assert [r.authorization for r in mock.requests] == [None, "Bearer k-1"]


async def test_stall_holds_until_released() -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        mock.reply(StallReply(before="wait ", after="done"))
        pending = asyncio.ensure_future(post(session, mock, chat("stall please")))
        request = await mock.wait_for_request("stall please")
        assert not request.completed
        mock.release_stalls()
        _, chunks = await pending
    assert streamed_text(chunks) == "wait done"
    assert request.completed


async def test_a_client_that_goes_away_mid_stall_is_recorded() -> None:
    async with OpenAIChatMock() as mock:
        async with aiohttp.ClientSession() as session:
            response = await session.post(
                f"{mock.base_url}/chat/completions", json=chat("MOCK_STALL")
            )
            first = await response.content.readline()
            assert first.startswith(b"data: ")
            request = await mock.wait_for_request("MOCK_STALL")
            response.close()
        await mock.wait_until(lambda: request.disconnected, within=5)
    assert not request.completed


async def test_responder_sees_the_request_and_may_fall_through() -> None:
    def responder(request: ChatRequest) -> TextReply | None:
        return TextReply(f"{len(request.messages)} messages") if request.stream else None

    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        mock.reply(responder)
        _, streamed = await post(session, mock, chat("x"))
        _, plain = await post(session, mock, chat("y", stream=False))
        assert await mock.wait_for_request("y") is mock.requests[1]
    assert streamed_text(streamed) == "2 messages"
    assert isinstance(plain, dict)
    assert plain["choices"][0]["message"]["content"] == "MOCK REPLY: y"
    assert [r.last_user_text for r in mock.matching(lambda r: not r.stream)] == ["y"]


async def test_a_hold_step_answers_only_once_released() -> None:
    async with OpenAIChatMock() as mock, aiohttp.ClientSession() as session:
        mock.turns.add([Hold(Say("held answer"))])
        posted = asyncio.ensure_future(post(session, mock, chat("wait for it", tools=TOOLS)))
        await mock.wait_for_request()
        await asyncio.wait({posted}, timeout=0.2)
        assert not posted.done(), "a held request is not answered"
        mock.turns.release()
        status, chunks = await asyncio.wait_for(posted, 10)

    assert status == 200
    assert streamed_text(chunks) == "held answer"
    assert mock.requests[0].model == "mock-model"


def test_every_mock_request_names_its_model() -> None:
    responses = ResponsesRequest(1, "/v1/responses", {}, {"model": "gpt-x"})
    gemini = GeminiRequest("/v1beta/models/gemini-9:streamGenerateContent", {}, {})
    unnamed = GeminiRequest("/v1beta/other", {}, {})

    assert (responses.model, gemini.model, unnamed.model) == ("gpt-x", "gemini-9", None)
