"""``serve`` in this process (serve_cli.serve): what the start does with the settings, the
signals it drains on, and the status it ends with, without a child process per case.

tests/transport/test_process.py starts the real command line; these run its coroutine on
a loop of their own, with the structlog lines captured, ports 0 on 127.0.0.1 and the
in-memory store."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import signal
import socket
import sys
import urllib.error
import urllib.request
from typing import Any, Awaitable, Callable

import grpc
import pytest
import structlog
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engine_service import serve_cli
from engine_service.settings import ENV_PREFIX
from engine_service.transport.generated import admin_pb2, admin_pb2_grpc, card_games_pb2_grpc

from .harness import RUN_TIMEOUT_S, expect_error
from .players import create_open_match
from .test_settings import _certificate, _parse

#: The flags of every case here: ports 0 on 127.0.0.1, the in-memory store, one bot worker.
LOCAL = ["--db", "memory:", "--host", "127.0.0.1", "--port", "0", "--metrics-host", "127.0.0.1",
         "--metrics-port", "0", "--bot-workers", "1"]
HANG_GUARD_S = 30.0


@pytest.fixture(autouse=True)
def _no_process_wide_gc_tuning(monkeypatch):
    """serve() freezes the garbage collector and raises its thresholds for the process: the
    test process keeps its own (the call is recorded)."""
    from engine_service import gc_policy

    calls: list[tuple] = []
    monkeypatch.setattr(gc_policy, "tune_gc", lambda *args: calls.append(args))
    return calls


def _serve(argv: list[str], while_serving: Callable[[dict], Awaitable[Any]] | None = None,
           env: dict[str, str] | None = None) -> tuple[int, list[dict], Any]:
    """Run serve() with ``LOCAL`` + ``argv``; once it serves, ``while_serving(serving_line)``
    (which ends it, by a signal or otherwise); then let it end. Its status, its log lines,
    and what ``while_serving`` returned. Also checks that serve() leaves the stop signals'
    handlers as it found them, and no task of its own running."""
    settings = _parse(LOCAL + argv, env or {})

    async def go():
        before = {sig: signal.getsignal(sig) for sig in serve_cli.STOP_SIGNALS}
        ready = asyncio.Event()
        task = asyncio.create_task(serve_cli.serve(settings, ready=ready))
        waiting = asyncio.create_task(ready.wait())
        await asyncio.wait({task, waiting}, timeout=HANG_GUARD_S, return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        result = None
        if not task.done():
            assert ready.is_set(), "serve() neither served nor ended"
            serving = next(line for line in logs if line["event"] == "serving")
            if while_serving is not None:
                result = await asyncio.wait_for(while_serving(serving), RUN_TIMEOUT_S)
        status = await asyncio.wait_for(task, HANG_GUARD_S)
        after = {sig: signal.getsignal(sig) for sig in serve_cli.STOP_SIGNALS}
        if after[signal.SIGINT] == signal.default_int_handler:  # where asyncio.run had its own
            after[signal.SIGINT] = before[signal.SIGINT]
        assert after == before
        await asyncio.sleep(0)  # a cancelled task is done one turn of the loop later
        left = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not left, left
        return status, result

    with structlog.testing.capture_logs() as logs:
        status, result = asyncio.run(go())
    return status, logs, result


def _events(logs: list[dict], event: str) -> list[dict]:
    return [line for line in logs if line["event"] == event]


async def _health(target: str, credentials: grpc.ChannelCredentials | None = None) -> int:
    channel = (grpc.aio.secure_channel(target, credentials) if credentials is not None
               else grpc.aio.insecure_channel(target))
    async with channel:
        return (await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="cardgames.v1.CardGamesService"), timeout=HANG_GUARD_S)).status


CREATED = 'cardgames_matches_created_total{game="klaberjass"}'


def _sample(metrics: str, name: str) -> float:
    """The value of sample ``name`` in a /metrics text (0 when absent: a counter not counted yet)."""
    return next((float(line.split(" ")[1]) for line in metrics.splitlines() if line.split(" ")[0] == name), 0.0)


def _metrics(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=HANG_GUARD_S).read().decode()


ADMIN_TOKEN = "0123456789abcdef-in-process"


def test_serve_serves_until_sigterm_then_drains_and_exits_0(_no_process_wide_gc_tuning):
    """The start logs the settings in force (never the token), serves gRPC and /metrics on
    the ports it logs, with the admin token and the limits it was given and the timed full
    collections; SIGTERM drains it (a second signal while draining is ignored, logged), its
    ports close, and it returns 0 with the stop signals' handlers put back."""
    async def while_serving(serving: dict) -> tuple[str, Any, Any, Any]:
        target = f"127.0.0.1:{serving['port']}"
        assert await _health(target) == health_pb2.HealthCheckResponse.SERVING
        async with grpc.aio.insecure_channel(target) as channel:
            admin = admin_pb2_grpc.AdminServiceStub(channel)
            listed = await admin.ListMatches(admin_pb2.ListMatchesRequest(),
                                             metadata=(("authorization", f"Bearer {ADMIN_TOKEN}"),))
            refused = await expect_error(admin.ListMatches(admin_pb2.ListMatchesRequest()))
            # --max-receive-message-bytes 1024: a larger request is refused
            too_large = await expect_error(admin.ListMatches(admin_pb2.ListMatchesRequest(game="x" * 2048),
                                                             metadata=(("authorization", f"Bearer {ADMIN_TOKEN}"),)))
            created_before = _sample(_metrics(serving["metrics_port"]), CREATED)
            await create_open_match(card_games_pb2_grpc.CardGamesServiceStub(channel), "klaberjass")
        metrics = _metrics(serving["metrics_port"])
        assert _sample(metrics, CREATED) == created_before + 1  # the session layer's metrics are served
        while not _events(logs_now(), "gc_full_collection"):  # every 0.05 s here
            await asyncio.sleep(0.01)
        signal.raise_signal(signal.SIGTERM)
        signal.raise_signal(signal.SIGINT)
        return metrics, listed, refused, too_large

    logs_now = _capture()
    status, logs, (metrics, listed, refused, too_large) = _serve(
        ["--admin-token", ADMIN_TOKEN, "--max-receive-message-bytes", "1024",
         "--gc-full-collection-interval-s", "0.05"], while_serving)
    assert status == 0
    assert list(listed.matches) == []
    assert (refused.code, refused.reason) == (grpc.StatusCode.UNAUTHENTICATED, "ADMIN_TOKEN_REQUIRED")
    assert too_large.code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert "cardgames_serving 1.0" in metrics
    assert _no_process_wide_gc_tuning == [()]
    starting, = _events(logs, "starting")
    assert (starting["port"], starting["metrics_port"], starting["db"], starting["tls"],
            starting["admin_api"], starting["event_loop"]) == (0, 0, "memory:", False, True, "asyncio")
    serving, = _events(logs, "serving")
    started, = _events(logs, "metrics_server_started")
    assert serving["port"] > 0 and serving["metrics_port"] == started["port"] > 0
    assert [line["signal"] for line in _events(logs, "signal_received")] == ["SIGTERM"]
    assert [(line["log_level"], line["signal"]) for line in _events(logs, "signal_ignored_while_draining")] == \
        [("warning", "SIGINT")]
    assert logs[-1] == {"event": "exit", "status": 0, "log_level": "info"}
    assert ADMIN_TOKEN not in repr(logs)
    with pytest.raises(urllib.error.URLError):  # the metrics endpoint closed with the engine
        _metrics(serving["metrics_port"])


def test_the_drain_lets_the_metrics_port_go_before_the_database(monkeypatch):
    """serve_cli's docstring: the store is closed, its lock released, after the ports, "so a
    successor waiting for it finds them free" (GrpcServer.drain's ``ports_closed``): when the
    store closes, its metrics port no longer takes a connection. (Closed only after the
    drain, a successor given the database found it still bound: metrics_port_unavailable.)"""
    from engine_service.store import memory

    port: list[int] = []
    connects: list[int] = []
    real_close = memory.MemoryStore.close

    async def close(self) -> None:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            connects.append(probe.connect_ex(("127.0.0.1", port[0])))
        await real_close(self)

    monkeypatch.setattr(memory.MemoryStore, "close", close)

    async def while_serving(serving: dict) -> None:
        port.append(serving["metrics_port"])
        signal.raise_signal(signal.SIGTERM)

    status, _, _ = _serve([], while_serving)
    assert status == 0
    assert connects and set(connects) == {errno.ECONNREFUSED}, connects


def _capture() -> Callable[[], list[dict]]:
    """The lines captured so far by the innermost structlog.testing.capture_logs()."""
    from structlog.testing import LogCapture

    def now() -> list[dict]:
        capture = next(p for p in structlog.get_config()["processors"] if isinstance(p, LogCapture))
        return capture.entries
    return now


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGHUP])
def test_sigint_and_sighup_drain_as_sigterm_does(sig, monkeypatch):
    """(And the start warns about a misspelt CARDGAMES_* variable of its environment, its
    value not shown.)"""
    monkeypatch.setenv("CARDGAMES_DB_PATH", "/elsewhere/s3cret-path.sqlite3")
    status, logs, _ = _serve([], lambda serving: _raise(sig))
    assert status == 0
    assert [line["signal"] for line in _events(logs, "signal_received")] == [sig.name]
    assert [(w["log_level"], w["variable"], w["did_you_mean"]) for w in _events(logs, "unknown_environment_variable")
            if w["variable"] == "CARDGAMES_DB_PATH"] == [("warning", "CARDGAMES_DB_PATH", "CARDGAMES_DB")]
    assert "s3cret-path" not in repr(logs)


def test_a_sighup_ignored_when_serve_starts_stays_ignored():
    """Started under nohup (SIGHUP ignored), the engine keeps ignoring it: a SIGHUP while
    serving changes nothing, and SIGTERM still stops it."""
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        async def while_serving(serving: dict) -> int:
            ignored = signal.getsignal(signal.SIGHUP)
            signal.raise_signal(signal.SIGHUP)
            health = await _health(f"127.0.0.1:{serving['port']}")
            signal.raise_signal(signal.SIGTERM)
            return ignored, health

        status, logs, (ignored, health) = _serve([], while_serving)
        assert ignored == signal.SIG_IGN and health == health_pb2.HealthCheckResponse.SERVING
        assert status == 0 and [line["signal"] for line in _events(logs, "signal_received")] == ["SIGTERM"]
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_serve_speaks_tls_with_the_certificate_given(tmp_path):
    cert, key = _certificate(tmp_path, "serve")

    async def while_serving(serving: dict) -> int:
        credentials = grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())
        health = await _health(f"localhost:{serving['port']}", credentials)
        signal.raise_signal(signal.SIGTERM)
        return health

    status, logs, health = _serve(["--tls-cert", str(cert), "--tls-key", str(key)], while_serving)
    assert (status, health) == (0, health_pb2.HealthCheckResponse.SERVING)
    assert _events(logs, "starting")[0]["tls"] is True


def test_losing_the_database_to_another_engine_drains_and_exits_1(monkeypatch):
    """The store's on_ownership_lost (the PostgreSQL lock session ended and another process
    took the lock) stops the engine as a signal does, with exit status 1 and one error line."""
    from engine_service import store as store_mod

    opened, asked = [], []
    real_open_store = store_mod.open_store
    monkeypatch.setattr(store_mod, "open_store",
                        lambda *a, **kw: asked.append(kw) or opened.append(real_open_store(*a, **kw)) or opened[-1])

    async def lose(serving: dict) -> None:
        opened[0].on_ownership_lost("the lock was taken by another engine")

    status, logs, _ = _serve(["--db-lock-wait-s", "7.5"], lose)
    assert status == serve_cli.EXIT_OWNERSHIP_LOST == 1
    assert asked == [{"lock_wait_s": 7.5}]  # how long a store waits for another engine to let go
    lost, = _events(logs, "stopping_ownership_lost")
    assert (lost["log_level"], lost["db"], lost["error"]) == ("error", "memory:", "the lock was taken by another engine")
    assert _events(logs, "exit")[-1]["status"] == 1


def test_losing_the_database_during_the_start_ends_with_exit_1_without_serving(monkeypatch):
    """Another engine taking the database while this one resumes its matches (on_ownership_lost
    before the gRPC server started) ends the start with status 1: health never says SERVING and
    no `serving` line is written for a database the engine no longer holds."""
    from engine_service import store as store_mod

    real_open_store = store_mod.open_store

    def open_and_lose(*args, **kwargs):
        store = real_open_store(*args, **kwargs)
        real_open = store.open

        async def open_then_lose():
            await real_open()
            store.on_ownership_lost("the lock was taken by another engine")
        store.open = open_then_lose
        return store
    monkeypatch.setattr(store_mod, "open_store", open_and_lose)

    status, logs, _ = _serve([])
    assert status == serve_cli.EXIT_OWNERSHIP_LOST
    assert [line["event"] for line in logs if line["event"] in
            ("stopping_ownership_lost", "serving", "exit")] == ["stopping_ownership_lost", "exit"]
    assert _events(logs, "exit")[0]["status"] == 1


@contextlib.contextmanager
def _port_in_use():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


@pytest.mark.parametrize("which", ["grpc", "metrics"])
def test_a_port_in_use_ends_the_start_with_exit_2_naming_it(which):
    """(A start refused for a busy gRPC port closes the metrics endpoint it had opened: a
    port the system had free a moment ago is given as --metrics-port, to be asked after.)"""
    with _port_in_use() as free:
        pass
    argv = ["--metrics-port", str(free)] if which == "grpc" else []
    flag = "--port" if which == "grpc" else "--metrics-port"
    with _port_in_use() as port:
        status, logs, _ = _serve(argv + [flag, str(port)])
    if which == "grpc":
        with pytest.raises(urllib.error.URLError):
            _metrics(free)
    assert status == serve_cli.EXIT_CONFIG == 2
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [(e["event"], e["host"], e["port"]) for e in errors] == [(f"{which}_port_unavailable", "127.0.0.1", port)]
    # docs/operations.md, the port events: `cannot bind HOST:PORT: Address already in use`,
    # the system's words alone (not "[Errno 98] Address already in use")
    assert errors[0]["error"] == f"cannot bind 127.0.0.1:{port}: Address already in use"
    assert not _events(logs, "serving") and not _events(logs, "metrics_server_started")


@pytest.mark.parametrize("argv, warned", [
    (["--bot-pace-s", "0.5"], [("warning", 0.5, 2.0)]), (["--bot-pace-s", "2"], []), (["--bot-pace-s", "0"], []),
    (["--bot-pace-s", "1.9", "--bot-deadline-s", "1.9"], []),
])
def test_a_bot_pace_below_the_bot_deadline_is_warned_about(argv, warned):
    """GJ-11.8: a pace under the bot deadline lets a bot that thinks long play later than a
    forced move; 0 (no pacing) and a pace of the deadline or more are not warned about."""
    status, logs, _ = _serve(argv, lambda serving: _raise(signal.SIGTERM))
    assert status == 0
    assert [(w["log_level"], w["bot_pace_s"], w["bot_deadline_s"])
            for w in _events(logs, "bot_pace_below_deadline")] == warned


def test_the_metrics_endpoint_listens_on_the_metrics_host():
    """docs/operations.md, ``--metrics-host``: the metrics endpoint binds that address, not
    ``--host``'s (here 127.0.0.2, another address of the loopback network, with gRPC on
    127.0.0.1)."""
    async def while_serving(serving: dict) -> str:
        url = f"http://127.0.0.2:{serving['metrics_port']}/metrics"
        text = urllib.request.urlopen(url, timeout=HANG_GUARD_S).read().decode()
        signal.raise_signal(signal.SIGTERM)
        return text

    status, _, metrics = _serve(["--metrics-host", "127.0.0.2"], while_serving)
    assert status == 0 and "cardgames_serving 1.0" in metrics


def test_the_starting_line_gives_the_limits_in_force():
    """docs/operations.md, the start-up events: ``starting`` gives the port, the database, TLS,
    the admin API "and a few limits" (serve_cli._summary): the most matches held, the default
    turn time and the reconnect grace period, each as set (a value unlike its default)."""
    status, logs, _ = _serve(["--max-matches", "77", "--default-turn-time-s", "12", "--reconnect-grace-s", "34"],
                             lambda serving: _raise(signal.SIGTERM))
    assert status == 0
    starting, = _events(logs, "starting")
    assert (starting["max_matches"], starting["default_turn_time_s"], starting["reconnect_grace_s"]) == (77, 12.0, 34.0)


@pytest.mark.parametrize("token, warned", [("x" * 15, [("warning", 15)]), ("x" * 16, [])])
def test_an_admin_token_under_16_characters_is_warned_about(token, warned):
    status, logs, _ = _serve(["--admin-token", token], lambda serving: _raise(signal.SIGTERM))
    assert status == 0
    assert [(w["log_level"], w["length"]) for w in _events(logs, "admin_token_short")] == warned
    assert token not in repr(logs)


async def _raise(sig: signal.Signals) -> None:
    signal.raise_signal(sig)


def test_the_unknown_variables_are_the_engines_prefix_not_read_by_any_setting():
    """Warned about at start: a CARDGAMES_* name no setting, plugin switch or other part of
    the project reads, with the setting's variable it is closest to (or None); never another
    prefix, a setting's own variable, the plugin switches or the tests' variables."""
    far = ENV_PREFIX + "NOTHING_LIKE_A_SETTING"  # spelt out, test_settings' scan would take it for one
    environ = {"CARDGAMES_DB_PATH": "x", "CARDGAMES_ADMIN_TOKN": "x", far: "x", "CARDGAMES_PORT": "1",
               "CARDGAMES_BOT_PLUGINS": "x", "CARDGAMES_DISABLE_PLUGIN_AUTOLOAD": "1", "CARDGAMES_TEST_PG": "x",
               "PATH": "/bin", "XCARDGAMES_DB_PATH": "x"}
    assert serve_cli.unknown_variables(environ) == [
        ("CARDGAMES_ADMIN_TOKN", "CARDGAMES_ADMIN_TOKEN"), ("CARDGAMES_DB_PATH", "CARDGAMES_DB"),
        (far, None)]


def test_event_loop_uvloop_without_uvloop_is_a_usage_error(monkeypatch, capsys):
    """Where uvloop is not installed (Windows), --event-loop auto runs on asyncio and
    --event-loop uvloop stops serve with exit status 2 and the reason, before anything
    starts."""
    from engine_service.__main__ import main

    monkeypatch.setitem(sys.modules, "uvloop", None)  # import uvloop: ImportError

    async def no_serving(settings, **_):
        raise AssertionError("serve started: the uvloop check let it through")

    # without the check the engine served for real here, and the test hung until killed
    monkeypatch.setattr(serve_cli, "serve", no_serving)
    assert serve_cli.event_loop_factory("auto") == (None, "asyncio")
    assert serve_cli.event_loop_factory("asyncio") == (None, "asyncio")
    assert main(["serve", "--event-loop", "uvloop"]) == serve_cli.EXIT_CONFIG
    assert capsys.readouterr().err == "error: --event-loop uvloop: uvloop is not installed\n"


@pytest.mark.parametrize("limits, warned", [((1024, 1_048_576), True), ((4096, 4096), False)])
def test_a_low_soft_open_files_limit_is_warned_about(monkeypatch, limits, warned):
    """The soft limit is the one that runs out: one the kernel would not raise to a high hard
    limit (1024 of 1048576) is warned about; 4096 is enough (fdlimits.LOW_OPEN_FILES)."""
    from engine_service.transport import fdlimits

    monkeypatch.setattr(fdlimits, "raise_open_files_limit", lambda: limits)
    status, logs, _ = _serve([], lambda serving: _raise(signal.SIGTERM))
    assert status == 0
    starting, = _events(logs, "starting")
    assert (starting["max_open_files"], starting["max_open_files_hard"]) == limits
    assert [(w["log_level"], w["max_open_files"]) for w in _events(logs, "open_files_limit_low")] == \
        ([("warning", limits[0])] if warned else [])


def test_every_transport_setting_reaches_the_grpc_server(monkeypatch):
    """Each transport flag is handed to the server as given (a value unlike its default
    each; ``--drain-grace-s`` to its drain): a limit left out would be served at its default
    without a word. With
    --gc-full-collection-interval-s 0 no timed collection runs (CPython decides)."""
    from engine_service.transport import server as server_mod
    from engine_service.transport.ratelimit import Rate, RateLimits, parse_networks

    made: list[dict] = []
    drained: list[float] = []
    real = server_mod.GrpcServer

    def make(*args, **kw):
        made.append(kw)
        server = real(*args, **kw)
        real_drain = server.drain

        async def drain(grace_s, **options):  # --drain-grace-s: the calls still running get it
            drained.append(grace_s)
            return await real_drain(grace_s, **options)

        server.drain = drain
        return server

    monkeypatch.setattr(server_mod, "GrpcServer", make)

    async def while_serving(serving: dict) -> list[str]:
        tasks = sorted(t.get_name() for t in asyncio.all_tasks())
        signal.raise_signal(signal.SIGTERM)
        return tasks

    status, logs, tasks = _serve(
        ["--max-receive-message-bytes", "2048", "--max-send-message-bytes", "8192", "--max-concurrent-streams", "7",
         "--keepalive-time-s", "11", "--keepalive-timeout-s", "12", "--handshake-timeout-s", "13",
         "--max-connection-idle-s", "14", "--max-pending-requests", "15", "--rate-limit-seat-per-s", "3",
         "--rate-limit-seat-burst", "4", "--rate-limit-peer-per-s", "5", "--rate-limit-peer-burst", "6",
         "--trusted-proxies", "10.0.0.0/8", "--gc-full-collection-interval-s", "0", "--drain-grace-s", "0.25"],
        while_serving)
    assert status == 0
    server, = made
    assert drained == [0.25]
    assert server["limits"] == server_mod.ServerLimits(
        max_receive_message_bytes=2048, max_send_message_bytes=8192, max_concurrent_streams=7, keepalive_time_s=11.0,
        keepalive_timeout_s=12.0, handshake_timeout_s=13.0, max_connection_idle_s=14.0, max_pending_requests=15)
    assert server["rate_limits"] == RateLimits(seat=Rate(3.0, 4), peer=Rate(5.0, 6),
                                               trusted_proxies=parse_networks("10.0.0.0/8"))
    assert (server["host"], server["port"], server["admin_token"], server["tls"]) == ("127.0.0.1", 0, None, None)
    assert "gc-full-collections" not in tasks


def test_a_corrupt_database_ends_the_start_with_exit_2_and_its_metrics_port_closed(tmp_path):
    """The metrics endpoint starts as soon as the store holds the database; a start refused
    after that (the integrity check at open finds a damaged page) ends with exit status 2,
    one store_unavailable line, and that endpoint closed again."""
    from tests.store.test_store import overwrite_page, sqlite_with_matches

    db = tmp_path / "cards.sqlite3"
    sqlite_with_matches(db)
    overwrite_page(db, 3)
    status, logs, _ = _serve(["--db", str(db)])
    assert status == serve_cli.EXIT_CONFIG
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [(e["event"], e["db"]) for e in errors] == [("store_unavailable", str(db))]
    assert "is corrupt" in errors[0]["error"], errors[0]  # SQLite's report, as test_process sees it
    started, = _events(logs, "metrics_server_started")
    with pytest.raises(urllib.error.URLError):
        _metrics(started["port"])


def _refusal(name: str) -> Exception:
    from engine_service import store as store_module

    return getattr(store_module, name)(f"db.sqlite3 refused: {name}")


@pytest.mark.parametrize("error", [OSError(errno.EIO, "Input/output error"),
                                   ValueError("incomplete SQL statement in the schema"),
                                   *map(_refusal, ["NotADatabase", "CorruptDatabase", "MigrationFailed",
                                                   "DatabaseReadOnly"])],
                         ids=["OSError", "ValueError", "NotADatabase", "CorruptDatabase", "MigrationFailed",
                              "DatabaseReadOnly"])
def test_each_refusal_of_the_stores_open_ends_the_start_with_exit_2_and_store_unavailable(error, monkeypatch):
    """serve_cli's docstring and docs/operations.md (When the database fails): an unusable
    database ends the process with exit status 2 and one store_unavailable line with the
    store's message, never SERVING nor a traceback: a file that is no database of ours, a
    damaged one, a migration refused and a database the engine cannot write (each a
    StoreError, store/base.py), and an OSError or a ValueError the store's open lets through
    (the SQLite store's schema check raises ValueError); the metrics endpoint it had started
    is closed again."""
    from engine_service.store import memory

    real_open = memory.MemoryStore.open

    async def failing_open(self) -> None:
        await real_open(self)  # holds the database: the metrics endpoint starts
        raise error

    monkeypatch.setattr(memory.MemoryStore, "open", failing_open)
    status, logs, _ = _serve([])
    assert status == serve_cli.EXIT_CONFIG
    errors = [line for line in logs if line["log_level"] == "error"]
    assert [(e["event"], e["db"], e["error"]) for e in errors] == [("store_unavailable", "memory:", str(error))]
    started, = _events(logs, "metrics_server_started")
    with pytest.raises(urllib.error.URLError):
        _metrics(started["port"])
    assert not _events(logs, "serving")


def test_a_takeover_bot_that_is_not_installed_ends_the_start_with_exit_2():
    """One error line names the bot asked for, the flag and variable, and the bots installed
    (test_process checks that the database is left as it was)."""
    status, logs, _ = _serve(["--takeover-bot", "nosuch"])
    assert status == serve_cli.EXIT_CONFIG
    error, = [line for line in logs if line["log_level"] == "error"]
    assert (error["event"], error["bot"]) == ("takeover_bot_unavailable", "nosuch")
    assert "random" in error["installed"]
    assert error["error"].startswith("--takeover-bot / CARDGAMES_TAKEOVER_BOT 'nosuch' is not an installed bot")


def test_a_grpc_port_taken_after_its_check_ends_the_start_with_exit_2_naming_why(monkeypatch):
    """The gRPC port is checked once the database is held; one taken between that check and
    gRPC's own bind failed the start with gRPC's message, which does not say why: serve asks
    again for the reason, logs it, and lets the metrics port, the database and the signals go."""
    from engine_service.transport import server as server_mod

    checks = []
    real_bind_error = server_mod.bind_error
    monkeypatch.setattr(server_mod, "bind_error",
                        lambda host, port: real_bind_error(host, port) if checks.append(port) or len(checks) > 1 else None)
    with _port_in_use() as port:
        status, logs, _ = _serve(["--port", str(port)])
    assert status == serve_cli.EXIT_CONFIG and checks == [port, port]
    error, = [line for line in logs if line["log_level"] == "error"]
    assert (error["event"], error["host"], error["port"]) == ("grpc_port_unavailable", "127.0.0.1", port)
    assert error["error"].startswith(f"cannot bind 127.0.0.1:{port}: ") and "in use" in error["error"]
    started, = _events(logs, "metrics_server_started")
    with pytest.raises(urllib.error.URLError):
        _metrics(started["port"])
    assert not _events(logs, "serving")


def test_a_grpc_server_start_that_fails_with_its_port_free_ends_the_start_with_exit_2_and_grpcs_message(
        monkeypatch):
    """gRPC's own start failed and asked again the port can be bound (so no bind reason to
    give): the error line says gRPC's message, and the start still ends with exit 2, its
    metrics port let go and no `serving` line."""
    from engine_service.transport import server as server_mod

    async def refused(self):
        raise RuntimeError("Failed to start the server: a reason of gRPC's own")

    monkeypatch.setattr(server_mod.GrpcServer, "start", refused)
    status, logs, _ = _serve([])
    assert status == serve_cli.EXIT_CONFIG
    error, = [line for line in logs if line["log_level"] == "error"]
    assert (error["event"], error["host"], error["port"], error["error"]) == (
        "grpc_port_unavailable", "127.0.0.1", 0, "Failed to start the server: a reason of gRPC's own")
    started, = _events(logs, "metrics_server_started")
    with pytest.raises(urllib.error.URLError):
        _metrics(started["port"])
    assert not _events(logs, "serving")


def test_the_command_configures_the_log_format_and_level_it_is_given(monkeypatch):
    """docs/operations.md, ``--log-format`` and ``--log-level``: ``serve`` (serve_cli.run)
    configures the logs with both before anything starts; the level was once left out,
    and ``--log-level warning`` still wrote every info line."""
    from engine_service.__main__ import main
    from engine_service.observability import logging as obs_logging

    configured: list[tuple] = []
    monkeypatch.setattr(obs_logging, "configure_logging", lambda *args, **kw: configured.append(args))

    async def served(settings, **kw) -> int:
        return 0

    monkeypatch.setattr(serve_cli, "serve", served)
    monkeypatch.delenv("GRPC_VERBOSITY", raising=False)  # run() sets it for the process
    saved = {sig: signal.getsignal(sig) for sig in serve_cli.STOP_SIGNALS}
    try:
        assert main(["serve", "--log-format", "console", "--log-level", "warning"]) == 0
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert configured == [("console", "warning")]


@pytest.mark.parametrize("given, expected", [(None, "ERROR"), ("INFO", "INFO")])
def test_the_command_quiets_grpc_core_unless_the_environment_says_otherwise(given, expected, monkeypatch):
    """docs/operations.md (gRPC core's own lines): ``serve`` sets ``GRPC_VERBOSITY=ERROR``
    unless the environment sets that variable, so that a connection to the TLS port that is
    not TLS is no ``Handshake failed`` line; ``GRPC_VERBOSITY=INFO`` brings the lines back
    (serve_cli.quiet_grpc_core; tests/clients/test_terminal_clients.py checks the clients')."""
    from engine_service.__main__ import main
    from engine_service.observability import logging as obs_logging

    monkeypatch.setattr(obs_logging, "configure_logging", lambda *args, **kw: None)
    seen: list[str | None] = []

    async def served(settings, **kw) -> int:
        seen.append(os.environ.get("GRPC_VERBOSITY"))
        return 0

    monkeypatch.setattr(serve_cli, "serve", served)
    monkeypatch.setenv("GRPC_VERBOSITY", "DEBUG")  # put back after the test, whatever run() sets
    if given is None:
        monkeypatch.delenv("GRPC_VERBOSITY")
    else:
        monkeypatch.setenv("GRPC_VERBOSITY", given)
    saved = {sig: signal.getsignal(sig) for sig in serve_cli.STOP_SIGNALS}
    try:
        assert main(["serve"]) == 0
    finally:
        for sig, handler in saved.items():
            signal.signal(sig, handler)
    assert seen == [expected]


def test_the_password_of_a_postgresql_url_is_never_logged(pg_url):
    """serve_cli._summary: the start-up line names the database "never ... the password of a
    PostgreSQL URL" (store.describe_location: ``***`` in its place), and no other line does."""
    from urllib.parse import urlsplit, urlunsplit

    from engine_service.store import describe_location

    parts = urlsplit(pg_url)
    netloc = f"{parts.username or 'postgres'}:s3cret-pw@{parts.netloc.rsplit('@', 1)[-1]}"
    url = urlunsplit(parts._replace(netloc=netloc))  # the test server trusts: the password is ignored
    status, logs, _ = _serve(["--db", url], lambda serving: _raise(signal.SIGTERM))
    assert status == 0
    starting, = _events(logs, "starting")
    assert starting["db"] == describe_location(url) and "***" in starting["db"]
    assert "s3cret-pw" not in repr(logs)
