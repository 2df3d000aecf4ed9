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
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Mapping

ENV_PREFIX = "CARDGAMES_"
LOG_FORMATS = ("auto", "json", "console")
LOG_LEVELS = ("debug", "info", "warning", "error", "critical")


@dataclass(frozen=True)
class Settings:
    """Everything ``python -m engine_service serve`` can be told (see :data:`SETTINGS`)."""

    # network
    host: str = "[::]"
    port: int = 50051
    metrics_host: str = "0.0.0.0"
    metrics_port: int = 9464
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # storage and logs
    db: str = "./cardgames.sqlite3"
    log_format: str = "auto"
    log_level: str = "info"
    # security
    admin_token: str | None = None
    # transport limits
    max_receive_message_bytes: int = 64 * 1024
    max_send_message_bytes: int = 4 * 1024 * 1024
    max_concurrent_streams: int = 100
    keepalive_time_s: float = 30.0
    keepalive_timeout_s: float = 10.0
    max_pending_requests: int = 10_000
    drain_grace_s: float = 10.0
    # sessions
    max_matches: int = 10_000
    max_watchers_per_match: int = 64
    default_turn_time_s: float = 0.0
    max_turn_time_s: float = 3600.0
    grace_period_s: float = 60.0
    heartbeat_s: float = 15.0
    snapshot_after_events: int = 200
    bot_deadline_s: float = 2.0
    bot_workers: int = 2
    takeover_bot: str = "random"


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

    name: str  # Settings field
    parse: Callable[[str], Any]
    help: str
    metavar: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

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
    Setting("db", str, "SQLite database file (created if missing; 'memory:' keeps nothing)", "PATH"),
    Setting("log_format", _choice(*LOG_FORMATS), "log format: json, console, or auto (json "
            "unless stderr is a terminal)", "FORMAT"),
    Setting("log_level", _choice(*LOG_LEVELS), "lowest level logged", "LEVEL"),
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
    Setting("max_matches", _nn_int, "most unfinished matches held at once", "N"),
    Setting("max_watchers_per_match", _nn_int, "most open WatchMatch streams per match", "N"),
    Setting("default_turn_time_s", _nn_float, "decision deadline of matches created without one "
            "(0: none)", "SECONDS"),
    Setting("max_turn_time_s", _nn_float, "longest decision deadline a match may ask for", "SECONDS"),
    Setting("grace_period_s", _nn_float, "how long a disconnected player may be away before "
            "the rulebook's absence policy applies", "SECONDS"),
    Setting("heartbeat_s", _nn_float, "heartbeat interval of idle watch streams", "SECONDS"),
    Setting("snapshot_after_events", _nn_int, "a watcher further behind than this starts from a "
            "snapshot", "N"),
    Setting("bot_deadline_s", _nn_float, "time a bot has for one decision", "SECONDS"),
    Setting("bot_workers", _nn_int, "bot worker processes", "N"),
    Setting("takeover_bot", str, "bot that plays for an absent Georgian Joker player", "NAME"),
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
        default = _env_default(s, env, getattr(defaults, s.name))
        shown = "unset" if default is None else default
        if s.name == "admin_token" and default is not None:
            shown = "set"  # never echo a secret in --help
        parser.add_argument(s.flag, dest=s.name, type=s.parse, default=default,
                            metavar=s.metavar or None,
                            help=f"{s.help} [env {s.env}; default: {shown}]")


def from_namespace(ns: argparse.Namespace) -> Settings:
    """Settings from parsed flags; cross-field errors raise ValueError."""
    values = {f.name: getattr(ns, f.name) for f in fields(Settings) if hasattr(ns, f.name)}
    settings = Settings(**values)
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    return settings
