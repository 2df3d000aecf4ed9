"""The one place where structlog is configured (ARCHITECTURE.md section 6).

Output is one JSON object per line (the default when stderr is not a terminal) or a
human-readable console line. Every line carries ``timestamp`` (ISO 8601, UTC), ``level``,
``logger`` and ``event``, plus whatever is bound: the transport binds request context with
``structlog.contextvars.bound_contextvars``; the session layer binds ``match_id``, ``game``,
``seat`` and ``seq`` on its domain events (``match_created``, ``action_applied``,
``deal_scored``, ``match_ended``, ``auto_move``, ``bot_failed``, ``seat_joined``,
``presence_changed``...).

Standard-library loggers (grpc, asyncio) are routed through the same renderer, so that the
process writes one format only.

What a log line may hold is a security matter: never a card a log reader may not see (hands,
decks, views), never a token. Accepted actions are public and may be logged; a *rejected*
action string is not logged (``play:AS`` refused for not following suit names a card of the
sender's hand), nor the answer of a failed bot.
"""

from __future__ import annotations

import logging
import sys
from typing import Literal, TextIO

import structlog

LogFormat = Literal["json", "console", "auto"]
LEVELS = ("debug", "info", "warning", "error", "critical")

_configured: tuple[str, str, int] | None = None


def _shared_processors() -> list:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        structlog.processors.StackInfoRenderer(),
    ]


def configure_logging(fmt: LogFormat = "auto", level: str = "info", stream: TextIO | None = None,
                      *, force: bool = False) -> str:
    """Configure structlog and the standard library's root logger once per process.

    ``fmt="auto"`` picks ``console`` when ``stream`` is a terminal, ``json`` otherwise. A second
    call with the same arguments does nothing; with other arguments (or ``force``) it
    reconfigures. Returns the format chosen.
    """
    global _configured
    stream = stream if stream is not None else sys.stderr
    level = level.lower()
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r}; allowed: {', '.join(LEVELS)}")
    if fmt == "auto":
        fmt = "console" if getattr(stream, "isatty", lambda: False)() else "json"
    if fmt not in ("json", "console"):
        raise ValueError(f"unknown log format {fmt!r}; allowed: json, console, auto")
    key = (fmt, level, id(stream))
    if _configured == key and not force:
        return fmt

    numeric = getattr(logging, level.upper())
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer()
        tail = [structlog.processors.dict_tracebacks]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=getattr(stream, "isatty", lambda: False)())
        tail = []

    structlog.configure(
        processors=[structlog.stdlib.filter_by_level, *_shared_processors(),
                    structlog.stdlib.PositionalArgumentsFormatter(),
                    structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        # not cached: structlog.testing.capture_logs() must see every logger, even one
        # used before the capture began (a lookup costs well under a microsecond)
        cache_logger_on_first_use=False,
    )
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *tail, renderer],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_cardgames", False):
            root.removeHandler(h)
    handler._cardgames = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric)
    _configured = key
    return fmt
