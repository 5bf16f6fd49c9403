"""One live Antigravity agent (an SDK `Agent` and its harness process) serving one
conversation, and the turn it is running.

A turn's items (the SDK's steps, our approval questions, then its end) arrive on one stream:
the steps from a reader task in the backend's task group, the questions from the pre-tool hook,
which runs in the SDK's own tasks while the harness waits for it. `run_turn` reads that stream.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.to_thread
import structlog
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from core.backend import Turn, procfs
from core.backend.process import untrack

log = structlog.get_logger(__name__)

CLOSE_TIMEOUT = 10.0


@dataclass(frozen=True)
class TurnEnd:
    """The SDK's turn ended: `error` is what its step stream raised (None: a normal end),
    `usage` the turn's token usage (the SDK's UsageMetadata), when it reported any."""

    error: BaseException | None = None
    usage: Any = None


Item = Any  # a google.antigravity Step | ApprovalRequest | TurnEnd


@dataclass(eq=False)
class ActiveTurn:
    turn: Turn
    sent: bool = False
    """The harness has the turn's message (so there is a turn to halt)."""
    halted: bool = False
    """`interrupt` stopped it (the harness was told to halt)."""
    done: anyio.Event = field(default_factory=anyio.Event)
    """The SDK's step stream for this turn has ended."""
    _send: MemoryObjectSendStream[Item] = field(init=False)
    receive: MemoryObjectReceiveStream[Item] = field(init=False)

    def __post_init__(self) -> None:
        # Unbounded: the reader must never wait on the consumer (a full buffer would stall the
        # SDK's step queue); a turn's steps are what the harness sent, held until read.
        self._send, self.receive = anyio.create_memory_object_stream[Item](math.inf)

    def send(self, item: Item) -> None:
        """Put an item on the turn's stream (never blocks; dropped once the turn is over)."""
        with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
            self._send.send_nowait(item)

    def close(self) -> None:
        self._send.close()
        self.receive.close()


@dataclass(eq=False)
class Session:
    """A started SDK agent for `conversation_id`; `turn` is the one it runs, if any."""

    conversation_id: str
    agent: Any
    gate: Any
    model: str | None = None
    """The model its harness runs (a turn choosing another one gets another harness)."""
    turn: ActiveTurn | None = None
    closed: bool = False

    @property
    def conversation(self) -> Any:
        return self.agent.conversation

    @property
    def harness(self) -> subprocess.Popen[bytes] | None:
        process = getattr(self.conversation.connection, "_process", None)
        return process if isinstance(process, subprocess.Popen) else None

    @property
    def alive(self) -> bool:
        harness = self.harness
        return not self.closed and harness is not None and harness.poll() is None

    async def lost(self, within: float = 2.0) -> bool:
        """Whether the harness is gone, waiting up to `within` s for its exit to show: its
        socket closes as it dies, before the kernel reports the exit to `poll()`, so the SDK
        can see the lost connection first (under load, by tens of milliseconds)."""
        harness = self.harness
        if self.closed or harness is None:
            return True
        try:
            await anyio.to_thread.run_sync(harness.wait, within)
        except subprocess.TimeoutExpired:
            return False
        return True

    async def close(self) -> None:
        """Disconnect the SDK (the harness exits when its stdin closes), then make sure the
        harness and whatever it started are gone. Never raises."""
        if self.closed:
            return
        self.closed = True
        harness = self.harness
        below = procfs.descendants(harness.pid) if harness is not None else []
        with anyio.CancelScope(shield=True):
            if harness is not None and harness.poll() is None:
                with anyio.move_on_after(CLOSE_TIMEOUT):
                    try:
                        await self.agent.__aexit__(None, None, None)
                    except Exception:
                        log.warning("antigravity.close_failed", exc_info=True)
            else:
                with contextlib.suppress(Exception):
                    await self.agent.__aexit__(None, None, None)
            if harness is not None:
                kill(harness, below)
                await untrack(harness.pid)


def kill(harness: subprocess.Popen[bytes], below: list[procfs.ProcessInfo]) -> None:
    """SIGKILL the harness's process group and each process it had started (its commands run
    in sessions of their own), if still the same processes; reap the harness."""
    # The harness leads its own group (start_new_session): the group id stays its pid while
    # any member lives, so this reaches what is left of the group even after it exited.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(harness.pid, signal.SIGKILL)
    for info in below:
        now = procfs.read(info.pid)
        if now is not None and not now.zombie and now.start_time == info.start_time:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(info.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        harness.wait(timeout=5)
    for pipe in (harness.stdin, harness.stdout, harness.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
