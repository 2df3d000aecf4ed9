"""``python -m engine_service serve``: run the gRPC service until SIGTERM / SIGINT.

Start-up: configure logs, open the store (waiting ``--db-lock-wait-s`` for its ownership
lock) and resume every unfinished match (MatchManager.start), then serve gRPC (health
SERVING). The Prometheus endpoint starts, and the gRPC port is checked, as soon as the store
holds the database and before it creates, checks or migrates anything (``Store.on_held``): a
second engine on the same host and database is refused with ``db_in_use``, not a busy port,
and a busy port stops the start before an older schema was migrated. A bad setting, an
unusable or corrupt database (the SQLite store's integrity check at open), a database error
while the unfinished matches are resumed, a database that another engine process holds (after
``--db-lock-wait-s``: one engine per database), bot workers that cannot be started or a busy port ends the process with exit
status 2 and one clear log line: an engine that cannot read its database must not report
SERVING.

Shutdown on SIGTERM, SIGINT or SIGHUP (a second signal is ignored while draining): health
NOT_SERVING, the session layer drains (new work gets UNAVAILABLE, in-flight actions finish,
watch streams end), the grpc server stops with ``--drain-grace-s`` for the calls still
running, the metrics endpoint closes, the store is flushed and closed (its lock released
after the ports, so a successor waiting for it finds them free), and the process exits 0. The same shutdown, with
exit status 1, when the store loses the ownership of its database to another engine (the
PostgreSQL store's lock session ended and another process took the lock); lost during the
start, before the gRPC server started, it ends with status 1 without ever serving.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Callable

import structlog

from . import settings as settings_mod
from .settings import Settings

log = structlog.get_logger("cardgames.serve")

EXIT_CONFIG = 2
EXIT_OWNERSHIP_LOST = 1

#: The signals that drain the serving engine and end it with status 0. SIGHUP is one: its
#: default action ended the process at once, without the drain (the terminal of a `make run`
#: closed, an ssh session dropped, `kill -HUP`, a supervisor's reload): every watch stream
#: cut without DRAINING, the calls in flight unanswered, no exit line. The engine has nothing
#: to reload (a renewed TLS certificate is picked up by itself), so SIGHUP stops it as SIGTERM
#: does. A process started with SIGHUP ignored (nohup) keeps ignoring it.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class PortUnavailable(Exception):
    """A port of the service cannot be bound (``which``: ``grpc`` or ``metrics``)."""

    def __init__(self, which: str, host: str, port: int, error: OSError) -> None:
        self.which, self.host, self.port = which, host, port
        self.reason = f"cannot bind {host}:{port}: {error.strerror or error}"
        super().__init__(self.reason)

    def log(self) -> None:
        fields = {"host": self.host, "port": self.port, "error": self.reason}
        if self.which == "metrics":
            log.error("metrics_port_unavailable", **fields)
        else:
            log.error("grpc_port_unavailable", **fields)


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "serve", help="run the gRPC service",
        description="Run the card-game engine gRPC service. Every flag has a CARDGAMES_* "
                    "environment equivalent (flag > environment > default).")
    settings_mod.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        settings = settings_mod.from_namespace(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        loop_factory, _ = event_loop_factory(settings.event_loop)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    from .observability.logging import configure_logging

    quiet_grpc_core()
    configure_logging(settings.log_format, settings.log_level)
    # Until it serves, SIGINT ends the process at once, as SIGTERM does (status 130 instead
    # of 143): nothing was acknowledged yet, and a write cut short is a transaction the next
    # start finds whole or not at all. Python's KeyboardInterrupt, which asyncio.Runner turns
    # into a cancellation, cannot reach the SQLite lock's wait on the store's thread: Ctrl-C
    # waited out the rest of --db-lock-wait-s, then left a traceback among the JSON lines.
    # Serving installs the drain's own handler (serve()); a handler of our own also keeps
    # Runner's out. Not SIG_DFL: in a container the engine is PID 1, and the kernel gives
    # PID 1 no signal it has no handler for: `docker stop` or a pod's deletion during the
    # start (a --db-lock-wait-s of 30 s, a long resume) was ignored until SIGKILL.
    for sig in STOP_SIGNALS:
        if sig != signal.SIGHUP or signal.getsignal(sig) != signal.SIG_IGN:
            signal.signal(sig, _end_at_once)
    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(serve(settings))


def _end_at_once(signum: int, frame: object) -> None:
    """Before the engine serves, a stop signal ends the process at once by the signal's own
    default action (killed by it: status 143 for SIGTERM, 130 for SIGINT); as PID 1 of a
    container, which the default action does not reach, with the same status by exit."""
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    os._exit(128 + signum)


def quiet_grpc_core() -> None:
    """Have gRPC's C core write only its errors (``GRPC_VERBOSITY=ERROR``) unless the
    environment says otherwise, before grpc is imported.

    The core writes its own plain lines on stderr, among the engine's JSON ones; at its default
    verbosity that was one ``Handshake failed`` line for every connection to a TLS port that
    was not TLS (a load balancer's TCP health check, a port scanner, a plaintext client): log
    volume and parse errors that anyone who can connect could cause. Its errors (``File
    descriptor limit reached``) are still written; ``GRPC_VERBOSITY=INFO`` brings the rest back.
    """
    os.environ.setdefault("GRPC_VERBOSITY", "ERROR")


def event_loop_factory(choice: str) -> tuple[Callable[[], asyncio.AbstractEventLoop] | None, str]:
    """The loop factory for ``--event-loop`` and the name of the loop it makes.

    uvloop (libuv) runs the same asyncio programs with less CPU per wake-up and callback, which
    the service spends several times per action (gRPC completions, store commits, stream
    messages): bench/README.md measures it. ``auto`` uses it where it is installed (it is a
    dependency except on Windows, where it does not exist); ``uvloop`` insists on it.
    """
    if choice == "asyncio":
        return None, "asyncio"
    try:
        import uvloop
    except ImportError:
        if choice == "uvloop":
            raise ValueError("--event-loop uvloop: uvloop is not installed") from None
        return None, "asyncio"
    return uvloop.new_event_loop, "uvloop"


#: Shorter admin tokens are accepted (the operator's choice) with a warning at start.
MIN_ADMIN_TOKEN_LENGTH = 16


#: The project's ``CARDGAMES_*`` variables that are not the engine's settings, read by the
#: tests, the bench and the Node client; an engine started from a shell (or by bench/soak.py)
#: that has them set is not misconfigured.
OTHER_PROJECT_VARIABLES = frozenset({
    "CARDGAMES_TEST_PG", "CARDGAMES_PRIVATE_PG",  # tests/store/pg.py, tests/postgres_env.sh
    "CARDGAMES_SHARED",  # tests/shared_paths.py: the rulebooks and vectors
    "CARDGAMES_SOAK_PROBE", "CARDGAMES_SOAK_PROBE_S", "CARDGAMES_SOAK_PROBE_COLLECT",  # bench/soak.py's engine
    "CARDGAMES_PROTO_DIR",  # clients/node/cardgames.js
})


def unknown_variables(environ: "os._Environ[str] | dict[str, str]") -> list[tuple[str, str | None]]:
    """The ``CARDGAMES_*`` variables that no setting reads, each with the setting's variable it
    is closest to (or None). A misspelt one was ignored without a word: ``CARDGAMES_DB_PATH``
    (the field is ``db_path``) started the engine on the default ./cardgames.sqlite3, every
    match of the real database out of sight; ``CARDGAMES_ADMIN_TOKN`` left the admin API off."""
    import difflib

    from .plugins.manager import ENV_ALLOWLIST, ENV_DISABLE_AUTOLOAD

    known = [s.env for s in settings_mod.SETTINGS] + [ENV_ALLOWLIST, ENV_DISABLE_AUTOLOAD]
    return [(name, next(iter(difflib.get_close_matches(name, known, n=1, cutoff=0.8)), None))
            for name in sorted(environ) if name.startswith(settings_mod.ENV_PREFIX) and name not in known
            and name not in OTHER_PROJECT_VARIABLES]


def _summary(settings: Settings) -> dict:
    """What the start-up line says about the settings (never the admin token itself, nor the
    password of a PostgreSQL URL)."""
    from .store import describe_location

    s = settings.session
    return {"port": settings.port, "metrics_port": settings.metrics_port,
            "db": describe_location(s.db_path), "tls": settings.tls_cert is not None,
            "admin_api": settings.admin_token is not None,
            "max_matches": s.max_matches, "default_turn_time_s": s.default_turn_time_s,
            "reconnect_grace_s": s.reconnect_grace_s}


async def serve(settings: Settings, *, ready: asyncio.Event | None = None) -> int:
    """Run until a signal (or ``stop()`` on the returned server); returns the exit status."""
    from .gc_policy import collect_periodically, tune_gc
    from .observability.metrics import get_metrics
    from .sessions.manager import BotHostUnavailable, MatchManager, TakeoverBotUnavailable
    from .store import StoreError, StoreInUse, describe_location, open_store
    from .transport.fdlimits import (open_files_fields, raise_open_files_limit,
                                     start_metrics_server, too_few_open_files)
    from .transport.ratelimit import Rate, RateLimits
    from .transport.server import GrpcServer, ServerLimits, TlsFiles, bind_error

    metrics = get_metrics()
    loop_type = type(asyncio.get_running_loop())
    open_files = raise_open_files_limit()  # one descriptor per client connection
    log.info("starting", **_summary(settings), **open_files_fields(*open_files),
             event_loop="uvloop" if loop_type.__module__.startswith("uvloop") else "asyncio")
    if too_few_open_files(open_files[0]):
        log.warning("open_files_limit_low", **open_files_fields(*open_files),
                    note="the engine holds one file descriptor per client connection: raise "
                         "the hard RLIMIT_NOFILE (ulimit -Hn, systemd LimitNOFILE=, docker "
                         "--ulimit nofile=) to serve more")
    if settings.admin_token is not None and len(settings.admin_token) < MIN_ADMIN_TOKEN_LENGTH:
        log.warning("admin_token_short", length=len(settings.admin_token),
                    note=f"the admin token is all that guards every match's hidden cards and the power "
                         f"to end matches: use at least {MIN_ADMIN_TOKEN_LENGTH} random characters "
                         "(openssl rand -hex 32)")
    for name, suggestion in unknown_variables(os.environ):
        log.warning("unknown_environment_variable", variable=name, did_you_mean=suggestion,
                    note="not a setting of the engine: ignored (its value is not shown)")
    if 0 < settings.session.bot_pace_s < settings.session.bot_deadline_s:
        log.warning("bot_pace_below_deadline", bot_pace_s=settings.session.bot_pace_s,
                    bot_deadline_s=settings.session.bot_deadline_s,
                    note="a bot that thinks longer than the pace plays later than a forced move (GJ-11.8)")
    db = describe_location(settings.session.db_path)
    store = open_store(settings.session.db_path, metrics, lock_wait_s=settings.session.db_lock_wait_s)
    manager = MatchManager(settings.session, store=store, metrics=metrics)
    stop = asyncio.Event()
    status = 0
    http = None

    def bind_ports() -> None:
        """Once the database is held and before it is changed (store.on_held): the metrics
        endpoint starts, and the gRPC port is checked. A second engine on the same host,
        ports and database (a forgotten `make run`) waits --db-lock-wait-s and is refused
        with db_in_use naming the first, not a busy port; a port in use stops the start
        before the store migrates (or creates) the database, which an engine that never
        served must leave as it found it."""
        nonlocal http
        try:
            http = start_metrics_server(settings.metrics_port, settings.metrics_host, metrics.registry)
        except OSError as exc:
            raise PortUnavailable("metrics", settings.metrics_host, settings.metrics_port, exc) from None
        error = bind_error(settings.host, settings.port)
        if error is not None:
            http.close()
            http = None
            raise PortUnavailable("grpc", settings.host, settings.port, error)
        log.info("metrics_server_started", port=http.server_port)

    def shutdown_metrics() -> None:
        if http is not None:
            http.close()

    def ownership_lost(message: str) -> None:
        nonlocal status
        log.error("stopping_ownership_lost", db=db, error=message)
        status = EXIT_OWNERSHIP_LOST
        stop.set()

    store.on_ownership_lost = ownership_lost
    store.on_held = bind_ports
    try:
        # health says SERVING only once a bot seat can be served: the workers started with the
        # manager (BotHost.warm), and a bot asked before they are up spends its decision's
        # deadline on their start-up (a bot match created at once timed out, bot_failed); the
        # wait comes before the resumed matches' timers are armed, so that their players'
        # grace periods do not run while the engine cannot be reached
        await manager.start(wait_for_bot_workers=True)
    except PortUnavailable as exc:
        exc.log()
        shutdown_metrics()  # the store did not open: nothing else to close
        return EXIT_CONFIG
    except TakeoverBotUnavailable as exc:
        log.error("takeover_bot_unavailable", bot=exc.bot, installed=exc.installed,
                  error=f"{settings_mod.BY_FIELD['takeover_bot'].names} {exc}")
        shutdown_metrics()
        return EXIT_CONFIG
    except BotHostUnavailable as exc:
        log.error("bot_host_unavailable", error=str(exc))
        return EXIT_CONFIG
    except StoreInUse as exc:
        log.error("db_in_use", db=db, error=str(exc))
        return EXIT_CONFIG
    except (StoreError, OSError, ValueError) as exc:
        log.error("store_unavailable", db=db, error=str(exc))
        shutdown_metrics()
        return EXIT_CONFIG
    assert http is not None  # every store's open() calls on_held (memory, SQLite, PostgreSQL)
    if stop.is_set():
        # another engine took the database during the start (the drain's signal handlers are
        # not in yet, so only ownership_lost sets stop): never say SERVING for a database this
        # engine no longer holds
        http.close()
        await manager.close()
        log.info("exit", status=status)
        return status

    limits = ServerLimits(
        max_receive_message_bytes=settings.max_receive_message_bytes,
        max_send_message_bytes=settings.max_send_message_bytes,
        max_concurrent_streams=settings.max_concurrent_streams,
        keepalive_time_s=settings.keepalive_time_s,
        keepalive_timeout_s=settings.keepalive_timeout_s,
        handshake_timeout_s=settings.handshake_timeout_s,
        max_connection_idle_s=settings.max_connection_idle_s,
        max_pending_requests=settings.max_pending_requests)
    tls = TlsFiles(settings.tls_cert, settings.tls_key) if settings.tls_cert and settings.tls_key else None
    rate_limits = RateLimits(seat=Rate(settings.rate_limit_seat_per_s, settings.rate_limit_seat_burst),
                             peer=Rate(settings.rate_limit_peer_per_s, settings.rate_limit_peer_burst),
                             trusted_proxies=settings.trusted_proxies)
    server = GrpcServer(manager, metrics=metrics, admin_token=settings.admin_token,
                        host=settings.host, port=settings.port, limits=limits, tls=tls,
                        rate_limits=rate_limits)
    # The drain's handlers go in before health can say SERVING: a signal in between found
    # SIG_DFL and ended the process at once, after a client or probe had seen it serving.
    loop = asyncio.get_running_loop()
    handled = [sig for sig in STOP_SIGNALS
               if sig != signal.SIGHUP or signal.getsignal(sig) != signal.SIG_IGN]
    for sig in handled:
        loop.add_signal_handler(sig, _on_signal, stop, sig)
    try:
        await server.start()
    except (OSError, RuntimeError) as exc:
        # the port was taken since bind_ports() checked it: gRPC's own message does not say why
        reason = bind_error(settings.host, settings.port)
        log.error("grpc_port_unavailable", host=settings.host, port=settings.port,
                  error=f"cannot bind {settings.host}:{settings.port}: {reason.strerror or reason}"
                  if reason is not None else str(exc))
        http.close()  # the ports before the database, as in the drain
        await manager.close()
        for sig in handled:
            loop.remove_signal_handler(sig)
        return EXIT_CONFIG

    tune_gc()
    collector = (asyncio.create_task(collect_periodically(settings.gc_full_collection_interval_s),
                                     name="gc-full-collections")
                 if settings.gc_full_collection_interval_s > 0 else None)
    if ready is not None:
        ready.set()
    log.info("serving", port=server.port, metrics_port=http.server_port)
    await stop.wait()
    if collector is not None:
        collector.cancel()
    try:
        await server.drain(settings.drain_grace_s, ports_closed=http.close)
    finally:
        http.close()
        for sig in handled:
            loop.remove_signal_handler(sig)
    log.info("exit", status=status)
    return status


def _on_signal(stop: asyncio.Event, sig: signal.Signals) -> None:
    if stop.is_set():
        log.warning("signal_ignored_while_draining", signal=sig.name)
        return
    log.info("signal_received", signal=sig.name)
    stop.set()
