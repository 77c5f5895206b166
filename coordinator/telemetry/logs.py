"""Structured logging (structlog): human-readable lines or one JSON object per line."""

from __future__ import annotations

import logging
import sys

import structlog


def configure(fmt: str = "plain", level: str = "INFO") -> None:
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if fmt == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
    # Libraries log through the standard library: their lines come out as ours, one line
    # each (the exception's message, not its traceback).
    logging.root.handlers = [_OneLine()]
    logging.root.setLevel(logging.WARNING)
    # asyncpg's pool logs each failed reconnection with a traceback; the daemon's own lines
    # already say when the database went away and when it came back (outage.py).
    logging.getLogger("asyncpg.pool").setLevel(logging.ERROR)


class _OneLine(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        error = record.exc_info[1] if record.exc_info else None
        extra = {"error": str(error) or repr(error)} if error is not None else {}
        structlog.get_logger(record.name).log(record.levelno, record.getMessage(), **extra)
