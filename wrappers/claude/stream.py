"""The items of one turn's stream: the CLI's messages and the permission questions, in the
order they happened (`ClaudeBackend.run_turn` reads them; its pump writes them)."""

from __future__ import annotations

import contextlib
import math
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import TYPE_CHECKING, Any, cast

import anyio
import structlog
from anyio.streams.memory import MemoryObjectSendStream
from claude_agent_sdk import ClaudeSDKClient, ClaudeSDKError, Message, ResultMessage, UserMessage

from core.backend import ApprovalRequest
from wrappers.claude.approvals import Approver

if TYPE_CHECKING:
    from wrappers.claude.pool import Pump

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


class Continued:
    """A result that ended only a part of the turn: the CLI runs the steered messages still
    pending as its next turn, and the daemon's turn goes on (its usage counts in the turn's)."""

    def __init__(self, result: ResultMessage) -> None:
        self.result = result


async def turn_items(client: ClaudeSDKClient, pump: Pump) -> AsyncGenerator[Message | Continued]:
    """The client's messages up to and including the result that ends the turn (`Pump.ends`);
    earlier results come as `Continued`. Notes in `pump` which steered messages the CLI took
    (it echoes each one it takes: `replay-user-messages`) and the final result. An async
    generator: closed explicitly, never left to the garbage collector."""
    messages = cast("AsyncGenerator[Message, None]", client.receive_messages())
    async with contextlib.aclosing(messages):
        async for message in messages:
            if isinstance(message, UserMessage) and message.uuid is not None:
                pump.pending.discard(message.uuid)
            if not isinstance(message, ResultMessage):
                yield message
            elif pump.ends():
                pump.result = message
                yield message
                return
            else:
                yield Continued(message)


async def once(message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
    yield message


class Ended:
    """The last item of a turn's stream: its messages ended (with a result, or not)."""


Item = Message | Continued | ApprovalRequest | Ended


async def pump(
    client: ClaudeSDKClient, pump: Pump, send: MemoryObjectSendStream[Item], pid: int | None
) -> None:
    """Read the turn's messages up to the result that ends it into the turn's stream, then an
    `Ended` (ClaudeBackend runs it as a task). Reads on when the turn's consumer is gone (an
    interrupted turn still ends with a result, which `interrupt` waits for)."""
    with send:
        try:
            async with contextlib.aclosing(turn_items(client, pump)) as items:
                async for item in items:
                    offer(send, item)
        except ClaudeSDKError as exc:
            log.warning("claude.turn_crashed", error=type(exc).__name__, pid=pid)
        finally:
            pump.done.set()
            offer(send, Ended())


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
