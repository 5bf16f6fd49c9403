"""Daemon-wide limits on messages and turns (server.max*), checked before anything is stored.

Turns of different contexts run in parallel, but at most `max_concurrent` at once in the daemon
(and `per_principal` at once per principal); the others wait in order as SUBMITTED. At most
`max_queued` admitted turns may be waiting at a time; beyond that a message is refused.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, nullcontext

from core.engine.config import Limits
from core.engine.gate import Gate
from core.engine.lanes import TurnLanes
from core.wire.errors import BusyError, InvalidParamsError
from core.wire.models import Message


class TooManyTurnsError(BusyError):
    default_message = "Too many turns are waiting in this daemon; retry later"


def check_message(message: Message, *, max_parts: int, max_file_bytes: int) -> None:
    """Refuse a message with too many parts or an inline file that is too large."""
    violations: list[tuple[str, str]] = []
    if len(message.parts) > max_parts:
        violations.append(("message.parts", f"at most {max_parts} parts (server.maxParts)"))
    for index, part in enumerate(message.parts):
        # base64 is 4 characters per 3 bytes; the exact size matters only near the limit.
        if part.raw is not None and len(part.raw) * 3 // 4 > max_file_bytes:
            violations.append(
                (
                    f"message.parts[{index}].raw",
                    f"a file of at most {max_file_bytes} bytes (server.maxFileBytes)",
                )
            )
    if violations:
        raise InvalidParamsError(
            "; ".join(f"{field}: {text}" for field, text in violations), violations=violations
        )


class TurnSlots:
    def __init__(self, max_concurrent: int, per_principal: int = 0, max_queued: int = 256) -> None:
        self._daemon = Gate(max_concurrent)
        self._per_principal = per_principal
        self._principals: dict[str, Gate] = {}
        self._max_queued = max_queued
        self._waiting = 0

    def admit(self) -> None:
        """Count a turn as waiting (raising TooManyTurnsError when too many are); pair with
        `turn()`, or `withdraw()` if the turn never starts."""
        if self._waiting >= self._max_queued:
            raise TooManyTurnsError(
                f"{self._waiting} turns are already waiting in this daemon "
                f"(server.maxQueuedTurns = {self._max_queued}); retry later"
            )
        self._waiting += 1

    def withdraw(self) -> None:
        self._waiting -= 1

    @asynccontextmanager
    async def turn(self, principal: str) -> AsyncIterator[None]:
        """Wait for a daemon slot (and a slot of the principal), hold them for the body."""
        waiting = True
        try:
            async with self._daemon, self._principal(principal):
                self.withdraw()
                waiting = False
                yield
        finally:
            if waiting:
                self.withdraw()

    def _principal(self, principal: str) -> AbstractAsyncContextManager[object]:
        if not self._per_principal:
            return nullcontext()
        limiter = self._principals.get(principal)
        if limiter is None:
            limiter = self._principals[principal] = Gate(self._per_principal)
        return limiter


class TurnPlaces:
    """The one owner of where a turn waits and runs: its context's lane (`server`'s queue per
    context) and a turn slot (the daemon's and the principal's concurrency). Admission takes
    both places before anything is stored; the scheduler runs the turn in them."""

    def __init__(self, limits: Limits) -> None:
        self.lanes = TurnLanes(limits.max_queued_turns)
        self.slots = TurnSlots(
            limits.max_concurrent_turns,
            limits.max_concurrent_turns_per_principal,
            limits.max_waiting_turns,
        )
