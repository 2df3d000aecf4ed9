"""Service settings: command-line flags with ``CARDGAMES_*`` environment equivalents.

Every setting has one :class:`Setting` entry: its flag, its environment variable, its type,
its embedded default and its help. Precedence: flag > environment > default, so ``make run``
(no flags, no environment) starts on the defaults, and a container sets the environment.
:func:`add_arguments` turns the table into argparse flags, :func:`from_namespace` the parsed
flags into an immutable :class:`Settings`, which the server and the session layer read.

A bad environment value (``CARDGAMES_PORT=http``) is an error naming the variable, not a
silent fall-back to the default.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from .sessions.config import SessionConfig

DEFAULT_DB = "./cardgames.sqlite3"
ENV_PREFIX = "CARDGAMES_"
LOG_FORMATS = ("auto", "json", "console")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")
EVENT_LOOPS = ("auto", "uvloop", "asyncio")


@dataclass(frozen=True)
class Settings:
    """Everything ``python -m engine_service serve`` can be told (see :data:`SETTINGS`): the
    server's own settings, and the session layer's :class:`SessionConfig` (whose defaults are
    the single source of the session defaults)."""

    # network
    host: str = "[::]"
    port: int = 50051
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 9464
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # logs
    log_format: str = "auto"
    log_level: str = "info"
    # runtime
    event_loop: str = "auto"
    # security
    admin_token: str | None = field(default=None, repr=False)  # a secret: never printed
    # transport limits
    max_receive_message_bytes: int = 64 * 1024
    max_send_message_bytes: int = 4 * 1024 * 1024
    max_concurrent_streams: int = 100
    keepalive_time_s: float = 30.0
    keepalive_timeout_s: float = 10.0
    max_pending_requests: int = 10_000
    drain_grace_s: float = 10.0
    # request-rate limits (transport/ratelimit.py): calls a second and burst, 0: no limit
    rate_limit_seat_per_s: float = 0.0
    rate_limit_seat_burst: int = 0
    rate_limit_peer_per_s: float = 0.0
    rate_limit_peer_burst: int = 0
    # the session layer (match store, timers, limits, bots)
    session: SessionConfig = field(default_factory=lambda: SessionConfig(db_path=DEFAULT_DB))


def _bool(text: str) -> bool:
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _non_negative(kind: Callable[[str], Any]) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        value = kind(text)
        if value < 0:
            raise ValueError(f"must not be negative: {text!r}")
        return value

    parse.__name__ = kind.__name__
    return parse


def _rate(text: str) -> float:
    """Calls a second: a finite number >= 0 (``inf`` or ``nan`` would make no bucket)."""
    value = float(text)
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"must be a finite number >= 0: {text!r}")
    return value


_rate.__name__ = "float"


def _port(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 65535:
        raise ValueError(f"not a port number: {text!r}")
    return value


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = text.strip().lower()
        if low not in allowed:
            raise ValueError(f"{text!r}; allowed: {', '.join(allowed)}")
        return low

    parse.__name__ = "choice"
    return parse


@dataclass(frozen=True)
class Setting:
    """One row of the settings table."""

    name: str  # the flag / environment name
    parse: Callable[[str], Any]
    help: str
    metavar: str = ""
    session_field: str = ""  # set: a SessionConfig field (else a Settings field of this name)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def default(self, defaults: Settings) -> Any:
        if self.session_field:
            return getattr(defaults.session, self.session_field)
        return getattr(defaults, self.name)

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()


_nn_int, _nn_float = _non_negative(int), _non_negative(float)

SETTINGS: tuple[Setting, ...] = (
    Setting("host", str, "address to listen on for gRPC", "HOST"),
    Setting("port", _port, "gRPC port (0: any free port, logged at start)", "PORT"),
    Setting("metrics_host", str, "address of the Prometheus /metrics endpoint", "HOST"),
    Setting("metrics_port", _port, "Prometheus metrics port (0: any free port, logged)", "PORT"),
    Setting("tls_cert", Path, "PEM certificate chain: serve TLS only (needs --tls-key)", "FILE"),
    Setting("tls_key", Path, "PEM private key of --tls-cert", "FILE"),
    Setting("log_format", _choice(*LOG_FORMATS), "log format: json, console, or auto (json "
            "unless stderr is a terminal)", "FORMAT"),
    Setting("log_level", _choice(*LOG_LEVELS), "lowest level logged", "LEVEL"),
    Setting("event_loop", _choice(*EVENT_LOOPS), "event loop: uvloop (libuv, less CPU per "
            "request), asyncio (the standard library's), or auto (uvloop where installed)", "LOOP"),
    Setting("admin_token", str, "bearer token of the admin API (unset: the admin API refuses "
            "every call); prefer the environment variable to a flag", "TOKEN"),
    Setting("max_receive_message_bytes", _nn_int, "largest request accepted", "BYTES"),
    Setting("max_send_message_bytes", _nn_int, "largest response sent", "BYTES"),
    Setting("max_concurrent_streams", _nn_int, "concurrent calls per HTTP/2 connection", "N"),
    Setting("keepalive_time_s", _nn_float, "ping idle connections this often", "SECONDS"),
    Setting("keepalive_timeout_s", _nn_float, "drop a connection whose ping is not answered "
            "within this time", "SECONDS"),
    Setting("max_pending_requests", _nn_int, "calls queued for the application in a burst", "N"),
    Setting("drain_grace_s", _nn_float, "on SIGTERM/SIGINT, time left to running calls", "SECONDS"),
    Setting("rate_limit_seat_per_s", _rate, "calls a second allowed per seat token (SubmitAction, "
            "GetView, LeaveMatch, WatchMatch opens); more: RESOURCE_EXHAUSTED RATE_LIMITED "
            "(0: no limit)", "N"),
    Setting("rate_limit_seat_burst", _nn_int, "calls a seat token may make at once before "
            "--rate-limit-seat-per-s applies (0: one second's worth)", "N"),
    Setting("rate_limit_peer_per_s", _rate, "calls a second allowed per client IP address for "
            "calls without a seat token (CreateMatch, JoinMatch, ListGames, spectators...; "
            "never the admin token); 0: no limit", "N"),
    Setting("rate_limit_peer_burst", _nn_int, "calls a client IP address may make at once "
            "before --rate-limit-peer-per-s applies (0: one second's worth)", "N"),
    # ---- the session layer (engine_service.sessions.config.SessionConfig) ----
    Setting("db", str, "SQLite file (created if missing), postgresql://user@host/db, 'memory:' (keeps nothing)",
            "PATH", "db_path"),
    Setting("db_lock_wait_s", _nn_float, "how long to wait at start for another engine process "
            "holding the database to let go (one engine per database) before refusing to start",
            "SECONDS", "db_lock_wait_s"),
    Setting("default_turn_time_s", _nn_float, "decision deadline of Klaberjass / Jo-Jotte "
            "matches created without one (JJK-11; 0: none)", "SECONDS", "default_turn_time_s"),
    Setting("reconnect_grace_s", _nn_float, "how long a disconnected player may be away before "
            "the rulebook's absence policy applies (games without the table option)", "SECONDS",
            "reconnect_grace_s"),
    Setting("time_scale", float, "multiply every deadline and grace period (demos, tests)",
            "FACTOR", "time_scale"),
    Setting("heartbeat_interval_s", float, "heartbeat interval of idle watch streams", "SECONDS",
            "heartbeat_interval_s"),
    Setting("snapshot_threshold", int, "a watcher further behind than this many actions starts "
            "from a snapshot", "N", "snapshot_threshold"),
    Setting("watcher_queue_size", int, "events buffered per watcher before its stream is closed",
            "N", "watcher_queue_size"),
    Setting("max_matches", int, "most unfinished matches held at once", "N", "max_matches"),
    Setting("max_waiting_matches", int, "most matches waiting for players", "N",
            "max_waiting_matches"),
    Setting("max_watchers_per_match", int, "most open spectator and admin WatchMatch streams per "
            "match (a seat's own streams do not count)", "N", "max_watchers_per_match"),
    Setting("max_streams_per_seat", int, "most open WatchMatch streams per seat token", "N",
            "max_streams_per_seat"),
    Setting("max_watchers", int, "most open spectator and admin WatchMatch streams in the "
            "process (seats' streams do not count)", "N", "max_watchers"),
    Setting("bot_deadline_s", float, "time a bot has for one decision", "SECONDS",
            "bot_deadline_s"),
    Setting("bot_pace_s", _nn_float, "every bot move is played this long after its decision came "
            "up, forced or not (GJ-11.8; keep it >= the bot deadline; 0: at once)", "SECONDS",
            "bot_pace_s"),
    Setting("bot_workers", int, "bot worker processes", "N", "bot_workers"),
    Setting("takeover_bot", str, "bot playing for an absent Georgian Joker player (empty: the "
            "rulebook's auto-move policy, GJ-12.2)", "NAME", "takeover_bot"),
    Setting("finished_retention_s", _nn_float, "how long a finished match stays in memory",
            "SECONDS", "finished_retention_s"),
    Setting("keep_finished_days", _nn_float, "delete from the database, with everything stored "
            "for them, the matches that ended more than this many days ago (checked every 10 "
            "minutes, in small batches); 0: keep them forever", "DAYS", "keep_finished_days"),
)


def _env_default(setting: Setting, env: Mapping[str, str], default: Any) -> Any:
    raw = env.get(setting.env)
    if raw is None or raw == "":
        return default
    try:
        return setting.parse(raw)
    except ValueError as exc:
        raise SystemExit(f"error: environment variable {setting.env}: {exc}") from None


def add_arguments(parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None) -> None:
    """One flag per setting, defaulting to its environment variable, else the embedded default."""
    env = os.environ if env is None else env
    defaults = Settings()
    for s in SETTINGS:
        default = _env_default(s, env, s.default(defaults))
        shown = "unset" if default is None else default
        if s.name == "admin_token" and default is not None:
            shown = "set"  # never echo a secret in --help
        parser.add_argument(s.flag, dest=s.name, type=s.parse, default=default,
                            metavar=s.metavar or None,
                            help=f"{s.help} [env {s.env}; default: {shown}]")


def from_namespace(ns: argparse.Namespace) -> Settings:
    """Settings from parsed flags; inconsistent values raise ValueError naming them."""
    own = {f.name for f in fields(Settings)} - {"session"}
    server = {s.name: getattr(ns, s.name) for s in SETTINGS if s.name in own and hasattr(ns, s.name)}
    session = {s.session_field: getattr(ns, s.name) for s in SETTINGS
               if s.session_field and hasattr(ns, s.name)}
    settings = Settings(**server, session=replace(Settings().session, **session))
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    for flag, path in (("--tls-cert", settings.tls_cert), ("--tls-key", settings.tls_key)):
        if path is not None:
            _check_pem(flag, path)
    return settings


def _check_pem(flag: str, path: Path) -> None:
    """A TLS file that cannot be read is a configuration error named by its flag (grpc would
    only say that the port could not be bound)."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    if b"-----BEGIN " not in text:
        raise ValueError(f"{flag} {path}: not a PEM file")
