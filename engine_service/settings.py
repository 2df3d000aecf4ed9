"""Service settings: command-line flags with ``CARDGAMES_*`` environment equivalents.

Every setting has one :class:`Setting` entry: its flag, its environment variable, its type,
its embedded default and its help. Precedence: flag > environment > default, so ``make run``
(no flags, no environment) starts on the defaults, and a container sets the environment.
:func:`add_arguments` turns the table into argparse flags, :func:`from_namespace` the parsed
flags into an immutable :class:`Settings`, which the server and the session layer read.

A bad value is an error, never a silent fall-back to the default: every setting has a range
(:attr:`Setting.allowed`; finite numbers only, gRPC's channel arguments within a C int), a bad
flag is argparse's error with that reason, and a bad environment value (``CARDGAMES_PORT=http``)
a ValueError naming the variable and its flag, raised only when ``serve`` builds its settings
(exit status 2 either way; other commands never read them).
"""

from __future__ import annotations

import argparse
import ipaddress
import math
import os
import re
import ssl
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from .bounded_read import PEM_LIMIT, FileRefused, read_bounded
from .observability.logging import LEVELS as LOG_LEVELS
from .sessions.config import SessionConfig
from .sessions.delay import MAX_SPECTATOR_DELAY
from .transport.auth import MAX_TOKEN_CHARS
from .transport.ratelimit import Network, parse_networks

DEFAULT_DB = "./cardgames.sqlite3"
ENV_PREFIX = "CARDGAMES_"
LOG_FORMATS = ("auto", "json", "console")
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
    gc_full_collection_interval_s: float = 300.0  # engine_service.gc_policy; 0: CPython decides
    # security
    admin_token: str | None = field(default=None, repr=False)  # a secret: never printed
    # transport limits
    max_receive_message_bytes: int = 64 * 1024
    max_send_message_bytes: int = 4 * 1024 * 1024
    max_concurrent_streams: int = 100
    keepalive_time_s: float = 30.0
    keepalive_timeout_s: float = 10.0
    handshake_timeout_s: float = 20.0
    max_connection_idle_s: float = 0.0  # 0: idle connections are never closed
    max_pending_requests: int = 10_000
    drain_grace_s: float = 10.0
    # request-rate limits (transport/ratelimit.py): calls a second and burst, 0: no limit
    rate_limit_seat_per_s: float = 0.0
    rate_limit_seat_burst: int = 0
    rate_limit_peer_per_s: float = 0.0
    rate_limit_peer_burst: int = 0
    trusted_proxies: tuple[Network, ...] = ()  # their x-forwarded-for names the client
    # the session layer (match store, timers, limits, bots)
    session: SessionConfig = field(default_factory=lambda: SessionConfig(db_path=DEFAULT_DB))


#: The largest value a gRPC channel argument can hold (a C ``int``): larger ones made the
#: server's start fail with a traceback (OverflowError), not a configuration error.
C_INT_MAX = 2**31 - 1
#: Upper bound of the durations in seconds: a day is far beyond any sensible deadline,
#: grace or wait, and keeps ``seconds * 1000`` a valid gRPC millisecond argument.
DAY_S = 86_400.0


def _number(text: str, kind: Callable[[str], Any], what: str) -> Any:
    try:
        return kind(text)
    except ValueError:
        raise ValueError(f"not {what}: {text!r}") from None


def _plain(x: float) -> str:
    """1000000.0 -> "1000000" (not "1e+06"), 0.5 -> "0.5"."""
    return str(int(x)) if x == int(x) else repr(x)


def _int(lo: int, hi: int, unit: str = "") -> Callable[[str], int]:
    """A whole number from ``lo`` to ``hi`` inclusive."""
    allowed = f"{lo} to {hi}" + (f" {unit}" if unit else "")

    def parse(text: str) -> int:
        value = _number(text, int, "a whole number")
        if not lo <= value <= hi:
            raise ValueError(f"must be {allowed}, not {text!r}")
        return value

    parse.__name__, parse.allowed = "int", allowed  # type: ignore[attr-defined]
    return parse


def _float(lo: float, hi: float, unit: str = "", *,
           above_lo: bool = False) -> Callable[[str], float]:
    """A finite number from ``lo`` (exclusive when ``above_lo``) to ``hi`` inclusive: ``nan``
    and ``inf`` are refused (a nan drain grace crashed the shutdown, a nan turn time made every
    CreateMatch INTERNAL, an infinite keepalive crashed the start)."""
    allowed = (f"more than {_plain(lo)} and at most {_plain(hi)}" if above_lo
               else f"{_plain(lo)} to {_plain(hi)}") + (f" {unit}" if unit else "")

    def parse(text: str) -> float:
        value = _number(text, float, "a number")
        if not math.isfinite(value) or value < lo or (above_lo and value == lo) or value > hi:
            raise ValueError(f"must be {allowed}, not {text!r}")
        return value

    parse.__name__, parse.allowed = "float", allowed  # type: ignore[attr-defined]
    return parse


def _off_or_float(lo: float, hi: float, unit: str = "") -> Callable[[str], float]:
    """0 (off), or a finite number from ``lo`` to ``hi`` inclusive (:func:`_float`): for a
    limit that is off by default and would make no sense below ``lo``."""
    inner = _float(lo, hi, unit)
    allowed = f"0 (off), or {inner.allowed}"  # type: ignore[attr-defined]

    def parse(text: str) -> float:
        value = _number(text, float, "a number")
        if value == 0:
            return 0.0
        try:
            return inner(text)
        except ValueError:
            raise ValueError(f"must be {allowed}, not {text!r}") from None

    parse.__name__, parse.allowed = "float", allowed  # type: ignore[attr-defined]
    return parse


def _text(text: str) -> str:
    """A string without surrounding whitespace, not empty (``--host``, ``--db``). A value from
    a file (a Secret or ConfigMap made with ``--from-file``, a YAML block scalar) ends with a
    newline: ``CARDGAMES_DB`` kept it, and the engine opened a new, empty SQLite file named
    with it beside the real one, every match gone from view (a PostgreSQL URL named a
    database "name\\n" that does not exist)."""
    if not text.strip():
        raise ValueError("must not be empty")
    return text.strip()


def _host(text: str) -> str:
    """``--host``, ``--metrics-host``: not empty, and a name or address the resolver can be
    asked about (an IPv6 address may come in brackets). A byte that is not UTF-8 (a lone
    surrogate), an empty label (``a..b``) or one over 63 characters fail the IDNA encoding
    getaddrinfo applies: a UnicodeError, logged as ``store_unavailable``, the database blamed
    for the address. A name that does not resolve is the bind's error (grpc_port_unavailable).

    Brackets hold an IPv6 address only: ``[127.0.0.1]``, ``[localhost]`` or ``[]`` (a
    template's ``[$(POD_IP)]`` of an empty or IPv4 value) passed the bind check, which drops
    the brackets, and gRPC then refused the address only after the engine had created or
    migrated its database ("Failed to bind to address [127.0.0.1]:50051; set
    GRPC_VERBOSITY=debug ...")."""
    host = _text(text)
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if name != host:
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            raise ValueError("not a host name or address: only an IPv6 address goes in brackets") from None
    try:
        name.encode("idna")
    except UnicodeError as exc:
        if any("\udc80" <= c <= "\udcff" for c in name):  # how Python keeps a byte that is not UTF-8
            reason = "a byte that is not UTF-8"
        else:  # "encoding with 'idna' codec failed (UnicodeError: label empty or too long)"
            reason = re.sub(r"^.*\(UnicodeError: (.*)\)$", r"\1", str(exc))
        raise ValueError(f"not a host name or address: {reason}") from None
    return host


_host.allowed = "a host name or address (an IPv6 address may be in brackets)"  # type: ignore[attr-defined]


_URL_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://")
_MISSPELT_POSTGRES = re.compile(r"postgres(?:ql)?(?::|//)", re.IGNORECASE)
_USERINFO = re.compile(r"(?:^|/)[^/:@]+:[^/@]*@")  # user:password@host, its scheme lost
_PASSWORD_PARAMETER = re.compile(r"\b(?:ssl)?password\s*=", re.IGNORECASE)  # libpq key=value


def _db_location(text: str) -> str:
    """``--db``: a SQLite file's path, a ``postgresql://`` (or ``postgres://``) URL, or
    ``memory:``. Any other ``scheme://`` is refused: the engine took it for a relative SQLite
    path (``sqlite:///var/lib/x.sqlite3``, a misspelt ``postgresq://user:secret@host/db``) and
    stopped later with "directory .../postgresq:/user:secret@host does not exist", the password
    in its log lines since only a PostgreSQL URL's is hidden. The message names the scheme
    only, never the value (it may hold a password). Refused too: a URL not at the start (kept
    quotes, ``"postgresql://..."`` from an env file; a ``jdbc:postgresql://`` URL), a
    ``postgresql:`` without its ``//`` or a ``postgresql//`` without its colon, any
    ``user:password@host`` left without its scheme, and libpq's ``host=... password=...`` form
    (the engine made a SQLite file of that name): no file path holds those, and they were
    logged as one; and a URL with a byte that is not UTF-8."""
    location = _text(text)
    scheme = _URL_SCHEME.match(location)
    if scheme and scheme.group(1).lower() not in ("postgresql", "postgres"):
        raise ValueError(f"must be a SQLite file's path, a postgresql:// URL or 'memory:', not a "
                         f"{scheme.group(1)}:// URL (value not shown: it may hold a password)")
    if not scheme and ("://" in location or _MISSPELT_POSTGRES.match(location)
                       or _USERINFO.search(location) or _PASSWORD_PARAMETER.search(location)):
        raise ValueError("must be a SQLite file's path, a postgresql:// URL or 'memory:', not a "
                         "URL that does not start with postgresql://, nor a key=value connection "
                         "string (kept quotes, a jdbc: prefix, a missing slash or colon, "
                         "user:password@, password=; value not shown: it may hold a password)")
    if scheme and any("\udc80" <= c <= "\udcff" for c in location):
        # how Python keeps a byte that is not UTF-8: libpq's connection string is UTF-8, and
        # prune died with a UnicodeEncodeError traceback (serve logged it as store_unavailable);
        # a SQLite path may hold any bytes
        raise ValueError("a postgresql:// URL with a byte that is not UTF-8 (value not shown: it may "
                         "hold a password)")
    return location


_db_location.allowed = "a SQLite file's path, a postgresql:// URL, or memory:"  # type: ignore[attr-defined]


def _admin_token(text: str) -> str:
    """The admin token, as a client sends it: ``authorization: Bearer <token>``.

    Surrounding whitespace is dropped, as ``clients.admin`` drops it from its token file: a
    Secret or an ``.env`` file written by ``openssl rand -hex 32 > token`` ends with a newline,
    and the engine used to keep it, making a token that no client can send (a header's value
    is read without it), so that every admin call was NOT_ADMIN with the right token. A token
    a header cannot carry (a space or control character inside, non-ASCII) or longer than the
    engine reads is refused at start for the same reason. The messages never quote it."""
    token = text.strip()
    if not token:
        raise ValueError("must not be empty")
    if len(token) > MAX_TOKEN_CHARS:
        raise ValueError(f"must be at most {MAX_TOKEN_CHARS} characters (a longer bearer token is "
                         f"refused), not {len(token)}")
    if not all(33 <= ord(c) <= 126 for c in token):
        raise ValueError("must be printable ASCII without spaces (what a gRPC header carries); "
                         "the value given has other characters inside (not shown: it is a secret)")
    return token


_admin_token.allowed = (f"printable ASCII without spaces, 1 to {MAX_TOKEN_CHARS} characters; "  # type: ignore[attr-defined]
                        "surrounding whitespace (a file's newline) is dropped")


def _bot_name(text: str) -> str:
    """Any name here; whether that bot is installed (and plays a four-player game) is known
    only once the plugins are loaded: MatchManager.start checks it (exit 2 otherwise)."""
    return text.strip()


_bot_name.allowed = "empty, or an installed bot (checked at start)"  # type: ignore[attr-defined]


def _path(text: str) -> Path:
    """A file's path, without surrounding whitespace (a value read from a file ends with a
    newline; see :func:`_text`)."""
    if not text.strip():
        raise ValueError("must not be empty")
    return Path(text.strip())


_path.allowed = "a file"  # type: ignore[attr-defined]


def _choice(*allowed: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        low = text.strip().lower()
        if low not in allowed:
            raise ValueError(f"must be one of {', '.join(allowed)}, not {text!r}")
        return low

    parse.allowed = ", ".join(allowed)  # type: ignore[attr-defined]
    return parse


def _turn_time(text: str) -> float:
    """A Klaberjass / Jo-Jotte default turn time: JJK-11's values (10-120 s), which a match's
    own turn time must take too (NOTATION.md section 5), or 0 for none."""
    value = _number(text, float, "a number")
    if not (value == 0 or 10.0 <= value <= 120.0):
        raise ValueError(f"must be 0 (none) or 10 to 120 seconds, not {text!r}")
    return value


_turn_time.allowed = "0, or 10 to 120 seconds (JJK-11)"  # type: ignore[attr-defined]


def _networks(text: str) -> tuple[Network, ...]:
    return parse_networks(text)


_networks.allowed = "empty, or IP addresses and CIDR networks, comma-separated"  # type: ignore[attr-defined]

_port = _int(0, 65535)
_seconds = _float(0.0, DAY_S, "seconds")  # 0 has a meaning (none, at once, no wait)
_hour = _float(0.0, 3600.0, "seconds")
_positive_hour = _float(0.0, 3600.0, "seconds", above_lo=True)
_rate = _float(0.0, 1_000_000.0)  # calls a second; 0: no limit
_burst = _int(0, 1_000_000)
_bytes = _int(1024, C_INT_MAX)
_count = _int(1, 1_000_000)


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

    @property
    def names(self) -> str:
        """Both ways to give the setting, for messages: ``--port / CARDGAMES_PORT``."""
        return f"{self.flag} / {self.env}"

    @property
    def allowed(self) -> str:
        """The values accepted, in words (``--help`` and docs/operations.md show it)."""
        return getattr(self.parse, "allowed", "")

    def from_flag(self, text: str) -> Any:
        """The flag's argparse type: the same reason as the environment path, not argparse's
        "invalid float value: '-1'" (argparse shows an ArgumentTypeError's message as is)."""
        try:
            return self.parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

SETTINGS: tuple[Setting, ...] = (
    Setting("host", _host, "address to listen on for gRPC", "HOST"),
    Setting("port", _port, "gRPC port (0: any free port, logged at start)", "PORT"),
    Setting("metrics_host", _host, "address of the Prometheus /metrics endpoint (IPv6: :: or [::], "
            "every address of both families)", "HOST"),
    Setting("metrics_port", _port, "Prometheus metrics port (0: any free port, logged)", "PORT"),
    Setting("tls_cert", _path, "PEM certificate chain: serve TLS only (needs --tls-key)", "FILE"),
    Setting("tls_key", _path, "PEM private key of --tls-cert", "FILE"),
    Setting("log_format", _choice(*LOG_FORMATS), "log format: json, console, or auto (json "
            "unless stderr is a terminal)", "FORMAT"),
    Setting("log_level", _choice(*LOG_LEVELS), "lowest level logged", "LEVEL"),
    Setting("event_loop", _choice(*EVENT_LOOPS), "event loop: uvloop (libuv, less CPU per "
            "request), asyncio (the standard library's), or auto (uvloop where installed)", "LOOP"),
    Setting("gc_full_collection_interval_s", _seconds, "run a full garbage collection when this "
            "long went by without one, logged as gc_full_collection with its pause (about 20 us "
            "per open match); 0: only when CPython decides", "SECONDS"),
    Setting("admin_token", _admin_token, "bearer token of the admin API (unset: the admin API refuses "
            "every call); prefer the environment variable to a flag", "TOKEN"),
    # gRPC channel arguments: C ints (milliseconds for the keepalive times)
    Setting("max_receive_message_bytes", _bytes, "largest request accepted", "BYTES"),
    Setting("max_send_message_bytes", _bytes, "largest response sent", "BYTES"),
    Setting("max_concurrent_streams", _int(1, C_INT_MAX), "concurrent calls per HTTP/2 "
            "connection", "N"),
    Setting("keepalive_time_s", _float(1.0, DAY_S, "seconds"), "ping idle connections this "
            "often", "SECONDS"),
    Setting("keepalive_timeout_s", _float(1.0, 3600.0, "seconds"), "drop a connection whose ping "
            "is not answered within this time", "SECONDS"),
    Setting("handshake_timeout_s", _float(1.0, 3600.0, "seconds"), "drop a new connection "
            "that has not finished its TLS handshake and HTTP/2 preface within this time (a "
            "client that connects and sends nothing holds a file descriptor until then)",
            "SECONDS"),
    Setting("max_connection_idle_s", _off_or_float(1.0, DAY_S, "seconds"), "close a connection "
            "that has had no call for this long (GOAWAY: the client reconnects on its next call; "
            "an open WatchMatch stream is a call; gRPC checks once per period, so it comes 1 to 2 "
            "times this long after the last call); 0: never, as gRPC does", "SECONDS"),
    # the hard limit is twice this (transport/server.py): gRPC's random early detection
    # between the two
    Setting("max_pending_requests", _int(1, C_INT_MAX // 2), "calls queued for the application "
            "in a burst; beyond it gRPC refuses new calls with RESOURCE_EXHAUSTED, at random and "
            "more often as the queue grows, every one at twice this", "N"),
    Setting("drain_grace_s", _hour, "on SIGTERM/SIGINT/SIGHUP, time left to running calls", "SECONDS"),
    Setting("rate_limit_seat_per_s", _rate, "calls a second allowed per seat token (SubmitAction, "
            "GetView, LeaveMatch, WatchMatch opens); more: RESOURCE_EXHAUSTED RATE_LIMITED "
            "(0: no limit)", "N"),
    Setting("rate_limit_seat_burst", _burst, "calls a seat token may make at once before "
            "--rate-limit-seat-per-s applies (0: one second's worth)", "N"),
    Setting("rate_limit_peer_per_s", _rate, "calls a second allowed per client IP address for "
            "calls without a seat token (CreateMatch, JoinMatch, ListGames, spectators...; "
            "never the admin token); 0: no limit", "N"),
    Setting("rate_limit_peer_burst", _burst, "calls a client IP address may make at once "
            "before --rate-limit-peer-per-s applies (0: one second's worth)", "N"),
    Setting("trusted_proxies", _networks, "proxies in front of the engine (a gRPC-web proxy, a "
            "load balancer) whose x-forwarded-for header names the client's address for "
            "--rate-limit-peer-*; empty: the connection's address is the client's", "CIDRS"),
    # ---- the session layer (engine_service.sessions.config.SessionConfig) ----
    Setting("db", _db_location, "SQLite file (created if missing), postgresql://user@host/db, 'memory:' "
            "(keeps nothing)", "PATH", "db_path"),
    Setting("db_lock_wait_s", _seconds, "how long to wait at start for another engine process "
            "holding the database to let go (one engine per database) before refusing to start",
            "SECONDS", "db_lock_wait_s"),
    Setting("default_turn_time_s", _turn_time, "decision deadline of Klaberjass / Jo-Jotte "
            "matches created without one (JJK-11; 0: none)", "SECONDS", "default_turn_time_s"),
    Setting("reconnect_grace_s", _seconds, "how long a disconnected player may be away before "
            "the rulebook's absence policy applies (games without the table option)", "SECONDS",
            "reconnect_grace_s"),
    # tests and benchmarks shrink time (0.005) or stretch it (100000: no deadline ever expires)
    Setting("time_scale", _float(0.0, 1_000_000.0, above_lo=True), "multiply every deadline and "
            "grace period, and the bot pace (demos, tests)", "FACTOR", "time_scale"),
    Setting("heartbeat_interval_s", _positive_hour, "heartbeat interval of idle watch streams",
            "SECONDS", "heartbeat_interval_s"),
    Setting("snapshot_threshold", _count, "a watcher further behind than this many actions starts "
            "from a snapshot", "N", "snapshot_threshold"),
    Setting("watcher_queue_size", _count, "events buffered per watcher before its stream is closed",
            "N", "watcher_queue_size"),
    Setting("max_matches", _count, "most unfinished matches held at once", "N", "max_matches"),
    Setting("max_waiting_matches", _count, "most matches waiting for players", "N",
            "max_waiting_matches"),
    Setting("max_bot_matches", _count, "most unfinished matches of bots only (every seat a bot's or left to the takeover bot); "
            "the admin is never refused one", "N", "max_bot_matches"),
    Setting("max_match_deals", _int(1, 1_000_000), "a match is ended once it has played this many "
            "deals, thrown-in deals included (terminated, reason deal_limit)", "N", "max_match_deals"),
    Setting("max_watchers_per_match", _int(1, 100_000), "most open spectator and admin WatchMatch "
            "streams per match (a seat's own streams do not count)", "N", "max_watchers_per_match"),
    Setting("max_streams_per_seat", _int(1, 1_000), "most open WatchMatch streams per seat token", "N",
            "max_streams_per_seat"),
    Setting("max_watchers", _int(1, 1_000_000), "most open spectator and admin WatchMatch streams in "
            "the process (seats' streams do not count)", "N", "max_watchers"),
    Setting("bot_deadline_s", _positive_hour, "time a bot has for one decision", "SECONDS",
            "bot_deadline_s"),
    Setting("bot_pace_s", _hour, "every bot move is played this long after its decision came up, "
            "forced or not (GJ-11.8; keep it >= the bot deadline; 0: at once)", "SECONDS",
            "bot_pace_s"),
    Setting("bot_workers", _int(1, 256), "bot worker processes", "N", "bot_workers"),
    Setting("bot_plugin_load_timeout_s", _positive_hour, "time one bot plugin's import, then its "
            "cardgames_bots hook, may take before the plugin is left out (bot_plugin_failed, "
            "'timed out') and the engine starts without it", "SECONDS", "bot_plugin_load_timeout_s"),
    Setting("takeover_bot", _bot_name, "bot playing for an absent Georgian Joker player (empty: "
            "the rulebook's auto-move policy, GJ-12.2); the engine refuses to start with a bot "
            "that is not installed", "NAME", "takeover_bot"),
    Setting("min_spectator_delay_actions", _int(0, MAX_SPECTATOR_DELAY), "spectators of every "
            "match created while it is set see it at least this many actions late while it is "
            "played (a match keeps the delay it was created with; a match may ask for more: "
            "CreateMatch spectator_delay_actions); 0: as each match asks",
            "N", "min_spectator_delay_actions"),
    Setting("finished_retention_s", _float(0.0, 30 * DAY_S, "seconds"), "how long a finished "
            "match stays in memory", "SECONDS", "finished_retention_s"),
    Setting("keep_finished_days", _float(0.0, 100 * 365.0, "days"), "delete from the database, with "
            "everything stored for them, the matches that ended more than this many days ago "
            "(checked every 10 minutes, in small batches); 0: keep them forever", "DAYS",
            "keep_finished_days"),
)

#: Setting by the name of the field it sets (Settings or SessionConfig), for messages.
BY_FIELD: dict[str, Setting] = {(s.session_field or s.name): s for s in SETTINGS}

_FROM_ENVIRONMENT = object()  # a flag not given: the environment, else the default, decides
_ENV_DEST = "_cardgames_environment"


def _env_value(setting: Setting, env: Mapping[str, str], default: Any) -> Any:
    """The setting's environment value (empty: unset), else ``default``; a bad value is a
    ValueError naming the variable, with the same reason as the flag's."""
    raw = env.get(setting.env)
    if raw is None or raw == "":
        return default
    try:
        return setting.parse(raw)
    except ValueError as exc:
        raise ValueError(f"environment variable {setting.env} ({setting.flag}): {exc}") from None


def add_arguments(parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None) -> None:
    """One flag per setting. The environment is read by :func:`from_namespace`, not here: a
    bad ``CARDGAMES_*`` value must stop ``serve`` (exit 2), not every command whose parser is
    built beside it (``replay`` used to fail on it). ``--help`` shows the value in force."""
    env = os.environ if env is None else env
    defaults = Settings()
    for s in SETTINGS:
        try:
            shown = _env_value(s, env, s.default(defaults))
            if shown is None:
                shown = "unset"
            elif isinstance(shown, tuple):
                shown = ",".join(map(str, shown)) or "empty"
            elif shown == "":
                shown = "empty"  # --takeover-bot: "default: ;" read as a glitch
            elif s.name == "admin_token":
                shown = "set"  # never echo a secret in --help
            elif s.name == "db":
                # a postgresql:// URL may hold a password: shown as the logs show it (***)
                from .store import describe_location
                shown = describe_location(shown)
        except ValueError:
            shown = f"invalid {s.env}"
        parser.add_argument(s.flag, dest=s.name, type=s.from_flag, default=_FROM_ENVIRONMENT,
                            metavar=s.metavar or None,
                            help=f"{s.help} [env {s.env}; default: {shown}; allowed: {s.allowed}]")
    parser.set_defaults(**{_ENV_DEST: env})


def from_namespace(ns: argparse.Namespace, env: Mapping[str, str] | None = None) -> Settings:
    """Settings from parsed flags, then the environment (``env``, else the one given to
    :func:`add_arguments`, else ``os.environ``), then the defaults. A bad environment value or
    an inconsistent pair raises ValueError naming the flag and the variable (the service exits
    2 on it, as argparse does for a bad flag)."""
    if env is None:
        env = getattr(ns, _ENV_DEST, None)
    env = os.environ if env is None else env
    defaults = Settings()
    values: dict[str, Any] = {}
    for s in SETTINGS:
        given = getattr(ns, s.name, _FROM_ENVIRONMENT)
        if given is _FROM_ENVIRONMENT:
            given = _env_value(s, env, s.default(defaults))
        values[s.name] = given
    own = {f.name for f in fields(Settings)} - {"session"}
    server = {name: value for name, value in values.items() if name in own}
    session = {s.session_field: values[s.name] for s in SETTINGS if s.session_field}
    try:
        settings = Settings(**server, session=replace(defaults.session, **session))
    except ValueError as exc:  # SessionConfig's own checks name its fields
        raise ValueError(_name_fields(str(exc))) from None
    grpc_port, metrics_port = BY_FIELD["port"], BY_FIELD["metrics_port"]
    if settings.port == settings.metrics_port != 0 and _same_address(settings.host, settings.metrics_host):
        # it failed only once the database was held, as "grpc_port_unavailable ... Address
        # already in use", the engine's own metrics endpoint holding the port
        raise ValueError(f"{grpc_port.names} and {metrics_port.names} are both {settings.port}: the gRPC "
                         "API and the metrics endpoint need a port each")
    from .plugins.manager import PluginSettings

    PluginSettings.resolve(environ=env)  # its environment too: a bad switch stops the start
    cert, key = BY_FIELD["tls_cert"], BY_FIELD["tls_key"]
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise ValueError(f"{cert.names} and {key.names} go together: give both, or neither")
    if settings.tls_cert is not None and settings.tls_key is not None:
        _check_tls_pair(cert.names, settings.tls_cert, key.names, settings.tls_key)
    return settings


def _same_address(a: str, b: str) -> bool:
    """Whether listening on ``a`` and on ``b`` (``--host``, ``--metrics-host``) can clash:
    the same address, or either of them every address."""
    a, b = (h[1:-1] if h.startswith("[") and h.endswith("]") else h for h in (a, b))
    wildcards = ("", "::", "0.0.0.0")
    return a == b or a in wildcards or b in wildcards


def _name_fields(message: str) -> str:
    """``time_scale must be > 0`` -> ``--time-scale / CARDGAMES_TIME_SCALE must be > 0``."""
    names = "|".join(sorted(BY_FIELD, key=len, reverse=True))
    return re.sub(rf"\b({names})\b", lambda m: BY_FIELD[m.group(1)].names, message)


def _check_pem(flag: str, path: Path, block: bytes, what: str, shown: str) -> bytes:
    """A TLS file that cannot be read, or does not hold a PEM block of the kind its flag
    needs, is a configuration error named by its flag and variable (grpc would only say that
    the port could not be bound)."""
    try:  # bounded: /dev/zero given as a certificate filled the memory
        text = read_bounded(path, PEM_LIMIT, pipes=False)
    except OSError as exc:
        raise ValueError(f"{flag} {path}: cannot read it ({exc.strerror})") from None
    except FileRefused as exc:
        raise ValueError(f"{flag} {path}: {exc}") from None
    if b"-----BEGIN " not in text:
        raise ValueError(f"{flag} {path}: not a PEM file")
    if block not in text:
        raise ValueError(f"{flag} {path}: holds no {what} (no {shown} block)")
    return text


def _check_tls_pair(cert_flag: str, cert: Path, key_flag: str, key: Path) -> None:
    """The certificate and its key must make a TLS server: a key of another certificate (or
    the certificate given as the key) passed the PEM check, and then the server only logged
    ``grpc_port_unavailable`` ("Failed to bind"), the real cause being a line of gRPC core on
    stderr. Python's ssl module loads the pair the way a TLS server does and says what is
    wrong. gRPC takes no passphrase, so an encrypted key is refused here too."""
    _check_pem(cert_flag, cert, b"CERTIFICATE-----", "certificate", "'-----BEGIN CERTIFICATE-----'")
    key_text = _check_pem(key_flag, key, b"PRIVATE KEY-----", "private key",
                          "'-----BEGIN ... PRIVATE KEY-----'")
    if b"ENCRYPTED" in key_text:
        raise ValueError(f"{key_flag} {key}: the private key is encrypted; gRPC needs it "
                         "unencrypted (openssl pkey -in KEY -out PLAIN_KEY)")

    def no_passphrase() -> bytes:
        raise ValueError("encrypted")

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key, password=no_passphrase)
    except ssl.SSLError as exc:
        if exc.reason == "KEY_VALUES_MISMATCH":
            raise ValueError(f"{key_flag} {key} is not the private key of the certificate of "
                             f"{cert_flag} {cert} (the key does not match it)") from None
        raise ValueError(f"{cert_flag} {cert} and {key_flag} {key}: not a usable certificate "
                         f"and private key ({exc})") from None
    except ValueError:
        raise ValueError(f"{key_flag} {key}: the private key is encrypted; gRPC needs it "
                         "unencrypted") from None
