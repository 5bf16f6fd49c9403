"""What a caller watching a task receives: the task's events up to the state that ends the
stream, and history trimmed to what was asked for."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Protocol

from core.wire.models import StreamResponse, Task


class EventSource(Protocol):
    """The events of one watched task, in order (a run's subscription here, or a task's
    events read back from another replica); `close` stops watching (idempotent)."""

    def __aiter__(self) -> AsyncIterator[StreamResponse]: ...

    def close(self) -> None: ...


def apply_history_length(task: Task, history_length: int | None) -> Task:
    """`task` with at most the last `history_length` messages (a copy only if it changes)."""
    if history_length is None or task.history is None:
        return task
    if history_length == 0:
        return task.model_copy(update={"history": None})
    if len(task.history) <= history_length:
        return task
    return task.model_copy(update={"history": task.history[-history_length:]})


def _ends_stream(event: StreamResponse, *, at_interrupt: bool) -> bool:
    if event.message is not None:
        return True
    status = (
        event.task.status
        if event.task
        else (event.status_update.status if event.status_update else None)
    )
    if status is None:
        return False
    return status.state.terminal or (at_interrupt and status.state.interrupted)


class EventStream:
    """The events of one stream, ending at a terminal (or, for sends, interrupted) state."""

    def __init__(
        self,
        subscription: EventSource,
        *,
        at_interrupt: bool,
        on_close: Callable[[], None] = lambda: None,
    ) -> None:
        self._subscription = subscription
        self._at_interrupt = at_interrupt
        self._on_close = on_close

    async def __aiter__(self) -> AsyncGenerator[StreamResponse, None]:
        try:
            async for event in self._subscription:
                yield event
                if _ends_stream(event, at_interrupt=self._at_interrupt):
                    return
        finally:
            self.close()

    def close(self) -> None:
        self._subscription.close()
        self._on_close()
