"""The items of one turn's stream: the CLI's messages and the permission questions, in the
order they happened (`ClaudeBackend.run_turn` reads them; its pump writes them)."""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any, cast

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from claude_agent_sdk import ClaudeSDKClient, Message

from core.backend import ApprovalRequest
from wrappers.claude.approvals import Approver

log = structlog.get_logger(__name__)

STDERR_LINES = 20


class StderrTail:
    """The CLI's last stderr lines, logged when it fails to start (at debug level otherwise:
    they may quote the conversation)."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque(maxlen=STDERR_LINES)

    def __call__(self, line: str) -> None:
        self.lines.append(line)
        log.debug("claude.stderr", line=line)


def messages(client: ClaudeSDKClient) -> AsyncGenerator[Message, None]:
    """The client's messages up to and including the turn's ResultMessage (an async generator:
    closed explicitly, never left to the garbage collector)."""
    return cast("AsyncGenerator[Message, None]", client.receive_response())


async def once(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message


class Ended:
    """The last item of a turn's stream: its messages ended (with a result, or not)."""


Item = Message | ApprovalRequest | Ended


def offer(send: MemoryObjectSendStream[Item], item: Item) -> None:
    """Put `item` into the turn's stream unless its consumer is gone."""
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
        send.send_nowait(item)


@contextlib.contextmanager
def questions(approver: Approver | None, send: MemoryObjectSendStream[Item]) -> Iterator[None]:
    """Route the permission questions of the client (if it asks) into the turn's stream while
    the turn runs; one arriving after it is denied (nobody is there to ask)."""
    if approver is None:
        yield
        return
    approver.begin(send.clone())
    try:
        yield
    finally:
        approver.end()


def discard() -> MemoryObjectSendStream[Item]:
    """A stream nobody reads (the reader of an interrupted turn whose consumer is gone)."""
    send, receive = anyio.create_memory_object_stream[Item](math.inf)
    receive.close()
    return send
