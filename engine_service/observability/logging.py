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

The service's own lines do not go through the standard library: the service logs several lines
per action (one per RPC, the domain events), and the stdlib bridge (LogRecord, handler,
formatter, a second processor chain) cost 100-200 µs a line. structlog's native path renders
each line once and writes it with one call: a level-filtering bound logger (levels below the
threshold are no-ops), a named line logger, one lock per stream shared with the stdlib handler
so that lines of both paths never interleave.

What a log line may hold is a security matter: never a card a log reader may not see (hands,
decks, views), never a token. Accepted actions are public and may be logged; a *rejected*
action string is not logged (``play:AS`` refused for not following suit names a card of the
sender's hand), nor the answer of a failed bot. A logged exception carries its traceback
without the frames' local variables: structlog renders them by default (``show_locals``), and a
frame of a call holds its bearer token, its request (a client join id, the admin's decks), the
records of a match (client action ids) and views; an unexpected error in such a call, a match
whose stored log does not replay for one, wrote the caller's seat token into the log.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from typing import Any, Literal, TextIO

import structlog
import structlog.tracebacks

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


class LineLogger:
    """A named structlog logger writing each rendered line to ``stream`` (one write, one flush,
    under the stream's lock). ``name`` is the ``logger`` field of its lines."""

    __slots__ = ("name", "_stream", "_lock")

    def __init__(self, name: str, stream: TextIO, lock: Any) -> None:
        self.name = name
        self._stream = stream
        self._lock = lock

    def msg(self, message: str) -> None:
        with self._lock:
            try:
                self._stream.write(message + "\n")
                self._stream.flush()
            except (OSError, ValueError):  # a closed or broken stream: like the stdlib
                pass  # handler, a log line that cannot be written never fails the caller

    log = debug = info = warn = warning = msg
    fatal = failure = err = error = critical = exception = msg


class LineLoggerFactory:
    """``structlog.get_logger(name)`` -> the :class:`LineLogger` of that name (one per name)."""

    def __init__(self, stream: TextIO, lock: Any) -> None:
        self._stream = stream
        self._lock = lock
        self._loggers: dict[str, LineLogger] = {}

    def __call__(self, *args: Any) -> LineLogger:
        name = args[0] if args and isinstance(args[0], str) else _caller_module()
        logger = self._loggers.get(name)
        if logger is None:
            logger = self._loggers[name] = LineLogger(name, self._stream, self._lock)
        return logger


def _caller_module() -> str:
    """The module that asked for a logger without naming it (what the stdlib factory does)."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module.startswith("structlog") or module == __name__):
            return module
        frame = frame.f_back  # type: ignore[assignment]
    return "root"


class _JsonDumps:
    """``json.dumps`` for structlog's JSONRenderer, with one encoder per ``default`` function.
    The renderer always passes ``default=``, and json.dumps builds a new ``JSONEncoder`` for
    every call given a keyword argument: 0.6 of the 4 us a line's JSON took. An encoder keeps
    nothing between calls, so the lines are the same bytes."""

    __slots__ = ("_encoders",)

    def __init__(self) -> None:
        self._encoders: dict[Any, json.JSONEncoder] = {}

    def __call__(self, obj: Any, *, default: Any = None) -> str:
        encoder = self._encoders.get(default)
        if encoder is None:
            encoder = self._encoders[default] = json.JSONEncoder(default=default)
        return encoder.encode(obj)


def _console_tracebacks(colors: bool) -> Any:
    """The console renderer's exception formatter, without the frames' locals (the module
    docstring): rich's when installed (its default shows them), else the plain one. Rich's
    is in colors only with the lines (its default is always: escape codes in a file)."""
    try:
        import rich  # noqa: F401
    except ImportError:
        return structlog.dev.plain_traceback
    return structlog.dev.RichTracebackFormatter(show_locals=False,
                                                color_system="truecolor" if colors else None)


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
    terminal = getattr(stream, "isatty", lambda: False)()
    if fmt == "auto":
        fmt = "console" if terminal else "json"
    if fmt not in ("json", "console"):
        raise ValueError(f"unknown log format {fmt!r}; allowed: json, console, auto")
    key = (fmt, level, id(stream))
    if _configured == key and not force:
        return fmt

    numeric = getattr(logging, level.upper())
    if fmt == "json":
        renderer = structlog.processors.JSONRenderer(serializer=_JsonDumps())
        # tracebacks as data, never with the frames' locals (tokens, requests, hands: above)
        tail = [structlog.processors.ExceptionRenderer(
            structlog.tracebacks.ExceptionDictTransformer(show_locals=False))]
    else:
        renderer = structlog.dev.ConsoleRenderer(colors=terminal,
                                                 exception_formatter=_console_tracebacks(terminal))
        tail = []

    # the standard library's records (grpc, asyncio): their own processor chain, same renderer
    formatter = structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=_shared_processors(),
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, *tail, renderer],
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(formatter)
    lock = threading.RLock()
    handler.lock = lock  # one lock per stream for both paths: whole lines, never interleaved
    structlog.configure(
        processors=[*_shared_processors(), *tail, renderer],
        logger_factory=LineLoggerFactory(stream, lock),
        wrapper_class=structlog.make_filtering_bound_logger(numeric),
        # not cached: structlog.testing.capture_logs() must see every logger, even one
        # used before the capture began (a lookup costs a few microseconds)
        cache_logger_on_first_use=False,
    )
    root = logging.getLogger()
    for h in list(root.handlers):
        if getattr(h, "_cardgames", False):
            root.removeHandler(h)
    handler._cardgames = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(numeric)
    _configured = key
    return fmt
