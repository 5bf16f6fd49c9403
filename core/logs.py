"""structlog, configured once by `main()`: JSON lines or console lines (`--log-format`; by
default console on a terminal, JSON otherwise)."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(level: str = "info", log_format: str = "auto") -> None:
    renderer: structlog.types.Processor
    console = sys.stderr.isatty() if log_format == "auto" else log_format == "console"
    renderer = structlog.dev.ConsoleRenderer() if console else structlog.processors.JSONRenderer()
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
