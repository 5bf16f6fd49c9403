"""Rate-limited logging for what a hostile or broken client can make happen at will.

A flood (thousands of idle connections, malformed requests, an exhausted accept loop) must not
become a flood of log lines. `LogSummary` logs the first event of a kind in full, counts the
rest for `interval` seconds, then writes one summary line with the count; the next event after
that starts a new window. At most two lines per kind per interval, however hard it is pushed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import structlog

log = structlog.get_logger(__name__)

SUMMARY_INTERVAL = 10.0  # s


class LogSummary:
    """Counts events per name. Only for use on the event loop's thread (callbacks included)."""

    def __init__(self, interval: float = SUMMARY_INTERVAL) -> None:
        self._interval = interval
        self._suppressed: dict[tuple[str, str], int] = {}
        self._timers: dict[tuple[str, str], asyncio.TimerHandle] = {}

    def note(self, event: str, *, key: str = "", first: bool = True, **fields: Any) -> None:
        """Record one `event` (windows are per event and `key`). `first`: log the window's
        first one in full (False: only count, for events expected by the thousand, such as
        refused connections)."""
        window = (event, key)
        if window in self._suppressed:
            self._suppressed[window] += 1
            return
        if first:
            log.warning(event, **fields)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on the loop (a thread): logged above, nothing to count with
        self._suppressed[window] = 0 if first else 1
        self._timers[window] = loop.call_later(self._interval, self._flush, window)

    def _flush(self, window: tuple[str, str]) -> None:
        self._timers.pop(window, None)
        count = self._suppressed.pop(window, 0)
        if count:
            event, key = window
            log.warning(
                "log.summary", of=event, key=key or None, count=count, seconds=self._interval
            )

    def close(self) -> None:
        """Write the pending summaries now (at shutdown)."""
        for window in list(self._timers):
            self._timers.pop(window).cancel()
            self._flush(window)

    def loop_exception_handler(
        self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]
    ) -> None:
        """For `loop.set_exception_handler`: asyncio reports a failing accept (too many open
        files) once per retry, with a traceback each time; one line per interval here."""
        exc = context.get("exception")
        self.note(
            "loop.error",
            key=str(context.get("message", "")),
            message=str(context.get("message", "")),
            error=type(exc).__name__ if exc is not None else None,
            exc_info=exc if isinstance(exc, BaseException) else None,
        )

    def logger(self, name: str) -> logging.Logger:
        """A stdlib logger whose records go through this summary (for aiohttp's protocol
        handler, which logs every malformed request with a traceback)."""
        logger = logging.getLogger(name)
        logger.propagate = False
        logger.setLevel(logging.WARNING)
        logger.handlers = [_SummaryHandler(self)]
        return logger


class _SummaryHandler(logging.Handler):
    def __init__(self, summary: LogSummary) -> None:
        super().__init__()
        self._summary = summary

    def emit(self, record: logging.LogRecord) -> None:
        exc = record.exc_info[1] if record.exc_info else None
        self._summary.note(
            "http.protocol_error",
            message=record.getMessage(),
            error=type(exc).__name__ if exc is not None else None,
        )
