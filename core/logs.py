"""structlog, configured once by `main()`: JSON lines or console lines (`--log-format`; by
default console on a terminal, JSON otherwise)."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Callable
from typing import Any

import structlog


class _Dumps:
    """`json.dumps` as structlog's JSONRenderer calls it (`default=` its fallback), with the
    encoder made once: `json.dumps` with any option builds a new one per call (per log line).
    Same text."""

    def __init__(self) -> None:
        self._encoders: dict[object, json.JSONEncoder] = {}

    def __call__(self, value: Any, default: Callable[[Any], Any] | None = None) -> str:
        encoder = self._encoders.get(default)
        if encoder is None:
            encoder = self._encoders[default] = json.JSONEncoder(default=default)
        return encoder.encode(value)


def configure(level: str = "info", log_format: str = "auto") -> None:
    renderer: structlog.types.Processor
    console = sys.stderr.isatty() if log_format == "auto" else log_format == "console"
    renderer = (
        structlog.dev.ConsoleRenderer()
        if console
        else structlog.processors.JSONRenderer(serializer=_Dumps())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping()[level.upper()]
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
