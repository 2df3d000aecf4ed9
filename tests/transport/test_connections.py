"""Connections as a production port meets them: a process out of file descriptors, clients
that connect and never finish the handshake, bytes that are not HTTP/2, oversized headers.

The engine must keep serving the connections it has, never spin a core, recover by itself,
close what will never become a call within a bounded time, and tell the operator (logs,
metrics) instead of failing silently. docs/operations.md, "Connections and file descriptors".
"""

from __future__ import annotations

import asyncio
import errno
import os
import socket
import struct
import subprocess
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engine_service.observability.metrics import Metrics
from engine_service.transport.fdlimits import ACCEPT_RETRY_S
from engine_service.transport.generated import card_games_pb2 as pb, card_games_pb2_grpc
from engine_service.transport.server import GrpcServer, ServerLimits, TlsFiles, channel_options
from engine_service.transport.tls import CertificateFiles

from .engine_process import Service
from .harness import expect_error, run, running
from .test_edge import ScriptedService

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no 'Max open files' line")


def _health(target: str, timeout: float = 30.0, channel: grpc.Channel | None = None) -> object:
    """SERVING (1) or the error code of a health check, on ``channel`` or a new connection."""
    own = channel is None
    channel = channel or grpc.insecure_channel(target, options=[("grpc.use_local_subchannel_pool", 1)])
    try:
        return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                         timeout=timeout).status
    except grpc.RpcError as exc:
        return exc.code()
    finally:
        if own:
            channel.close()


def _until(predicate, timeout: float = 30.0, step: float = 0.05) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(step)


# ---- file descriptors -----------------------------------------------------------------------

def test_the_soft_open_files_limit_is_raised_to_the_hard_one_and_logged(tmp_path):
    """Every connection holds a descriptor: a process started with systemd's or Docker's soft
    limit of 1024 (hard 524288) stopped accepting near a thousand players. The engine lifts
    the soft limit to the hard one, says what it got, and warns when even that is low."""
    svc = Service(tmp_path, tmp_path / "e.db", "engine", open_files=(256, 2048))
    try:
        assert _limits(svc.proc.pid) == (2048, 2048)
        lines = svc.lines()
        starting = next(line for line in lines if line["event"] == "starting")
        assert (starting["max_open_files"], starting["max_open_files_hard"]) == (2048, 2048)
        low = [line for line in lines if line["event"] == "open_files_limit_low"]
        assert len(low) == 1 and low[0]["level"] == "warning" and low[0]["max_open_files"] == 2048
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()


@pytest.mark.parametrize("token, warned", [("short-secret", True), ("a" * 16, False)])
def test_a_short_admin_token_is_accepted_with_a_warning(tmp_path, token, warned):
    """Any non-empty admin token is the operator's choice, but one under 16 characters is
    guessable: the start says so (admin_token_short, its length, never the token)."""
    svc = Service(tmp_path, tmp_path / "e.db", "engine", CARDGAMES_ADMIN_TOKEN=token)
    try:
        short = [line for line in svc.lines() if line["event"] == "admin_token_short"]
        assert [(w["level"], w["length"]) for w in short] == ([("warning", len(token))] if warned else [])
        assert token not in svc.log_path.read_text()
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()


def test_out_of_file_descriptors_the_engine_serves_its_connections_without_spinning(tmp_path):
    """More connections than the process may open: the calls on connections already open go
    on, new ones wait in the kernel's queue, nothing spins a core, the operator is told, and
    everything is back once connections close.

    gRPC's own listener retries accept once a second (its plain "File descriptor limit
    reached" line). The Prometheus endpoint did not: a scrape waiting while no descriptor was
    free made its accept loop spin a whole core (3.99 s of CPU in 4 s), without a word. Not
    spinning is counted, not timed (a loaded machine skews CPU figures): the endpoint's
    failed accepts over the episode, which it logs when it ends, are at most one per
    ACCEPT_RETRY_S pause it spent in it (a spinning loop: hundreds of thousands)."""
    limit = 96
    svc = Service(tmp_path, tmp_path / "e.db", "engine", open_files=(limit, limit))
    held = grpc.insecure_channel(svc.target, options=[("grpc.use_local_subchannel_pool", 1)])
    flood: list[socket.socket] = []
    scrape = None
    try:
        assert _health(svc.target, channel=held) == health_pb2.HealthCheckResponse.SERVING
        for _ in range(limit + 16):  # the kernel accepts them all (backlog); the engine cannot
            flood.append(socket.create_connection(("127.0.0.1", svc.port)))
        _until(lambda: _open_fds(svc.proc.pid) >= limit)
        scrape = socket.create_connection(("127.0.0.1", svc.metrics_port))
        scrape.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")  # waits in the queue too
        # an episode long enough for a spinning accept loop to show (hundreds of thousands of
        # failed accepts a second), with the second health check's deadline below: 2 s
        time.sleep(1.0)
        # the connection already open is served; a new one waits (here: its deadline)
        assert _health(svc.target, channel=held) == health_pb2.HealthCheckResponse.SERVING
        assert _health(svc.target, timeout=1.0) == grpc.StatusCode.DEADLINE_EXCEEDED
        exhausted = [line for line in svc.lines(grpc_core=True) if line["event"] == "open_files_exhausted"]
        assert len(exhausted) == 1 and exhausted[0]["level"] == "warning"
        assert exhausted[0]["max_open_files"] == limit
        assert any("File descriptor limit reached" in raw for raw in svc.grpc_core_lines())

        for s in flood:
            s.close()
        flood.clear()
        scrape.settimeout(30)
        answer = b""
        while chunk := scrape.recv(65536):
            answer += chunk
        # the queued scrape is answered; its process metrics may be missing (prometheus_client
        # skips them when it cannot open /proc files: gRPC was still accepting the backlog of
        # closed connections then, a descriptor each, and a CI run saw them left out)
        assert answer.startswith(b"HTTP/1.0 200") and b"cardgames_store_volume_size_bytes" in answer
        assert _health(svc.target) == health_pb2.HealthCheckResponse.SERVING

        def scrape_has_process_metrics() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{svc.metrics_port}/metrics", timeout=30) as reply:
                return b"process_open_fds" in reply.read()

        _until(scrape_has_process_metrics)
        available = [line for line in svc.lines(grpc_core=True) if line["event"] == "open_files_available"]
        assert len(available) == 1 and available[0]["failed_accepts"] >= 1, available
        # each failed accept is followed by a pause of ACCEPT_RETRY_S before the next attempt,
        # all within the episode (exhausted_s, rounded to 0.1 s: one pause of slack)
        assert available[0]["failed_accepts"] <= available[0]["exhausted_s"] / ACCEPT_RETRY_S + 1, available
        held.close()
        assert svc.stop() == 0
    finally:
        for s in flood:
            s.close()
        if scrape is not None:
            scrape.close()
        held.close()
        if svc.proc.poll() is None:
            svc.proc.kill()


# ---- connections that never become a call -----------------------------------------------------

def _certificate(folder: Path) -> TlsFiles:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    return TlsFiles(cert, key)


async def _closed_after(port: int, data: bytes, within: float) -> tuple[float, bytes]:
    """Connect, send ``data``, read until the server closes: (seconds it took, bytes read).
    TimeoutError if the connection is still open after ``within`` seconds."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        if data:
            writer.write(data)
            await writer.drain()
        received = await asyncio.wait_for(reader.read(), within)  # until EOF
        return time.monotonic() - started, received
    finally:
        writer.close()


async def _serves_a_call(server, port: int, tls: bool) -> None:
    """A client of the port (TLS or not) is answered: the connections being refused or closed
    meanwhile did not stop the server."""
    if tls:
        creds = grpc.ssl_channel_credentials(root_certificates=server._tls.cert.read_bytes())
        channel = grpc.aio.secure_channel(f"localhost:{port}", creds)
    else:
        channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    async with channel:
        games = await card_games_pb2_grpc.CardGamesServiceStub(channel).ListGames(
            pb.ListGamesRequest(), timeout=30)
        assert [g.id for g in games.games] == ["g"]


@pytest.mark.parametrize("host", ["127.0.0.1", "[::1]"])
@run
async def test_the_started_line_names_the_port_bound_when_any_was_asked_for(host):
    """--port 0 binds any free port, "logged at start": grpc_server_started's ``port`` was
    that port, but its ``address`` kept the 0 it was asked for (``127.0.0.1:0``)."""
    from structlog.testing import capture_logs

    with capture_logs() as logs:
        server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host=host, port=0)
        port = await server.start()
    try:
        (started,) = [e for e in logs if e["event"] == "grpc_server_started"]
        assert port > 0 and (started["address"], started["port"]) == (f"{host}:{port}", port)
        assert started["tls"] is False  # docs/operations.md, Logs: the line says whether TLS is served
    finally:
        await server.drain(grace_s=1)


@run
async def test_an_ipv6_host_without_brackets_is_served_as_with_them():
    """--host :: or ::1 (as --metrics-host takes them) made gRPC's address ``:::50051``, which
    it refused with "Failed to bind to address ...; set GRPC_VERBOSITY=debug": the start failed
    with grpc_port_unavailable, no word of the brackets. Now it listens there."""
    from structlog.testing import capture_logs

    for host, shown in (("::1", "[::1]"), ("::", "[::]")):
        with capture_logs() as logs:
            server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host=host, port=0)
            port = await server.start()
        try:
            (started,) = [e for e in logs if e["event"] == "grpc_server_started"]
            assert started["address"] == f"{shown}:{port}"
            async with grpc.aio.insecure_channel(f"[::1]:{port}") as channel:
                reply = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=30)
                assert reply.status == health_pb2.HealthCheckResponse.SERVING
        finally:
            await server.drain(grace_s=1)


def _listening(family: int, address: str, v6only: bool = False, reuse: bool = False) -> socket.socket:
    """A socket listening on ``address`` (any port): another process holding a port."""
    listener = socket.socket(family, socket.SOCK_STREAM)
    if reuse:  # as gRPC's listeners
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if family == socket.AF_INET6:
        listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, int(v6only))
    listener.bind((address, 0))
    listener.listen()
    return listener


def test_a_port_taken_on_ipv4_alone_is_no_free_wildcard_port():
    """bind_error (server.py; docs/operations.md, Health, start-up and shutdown: a port in use
    ends the start naming it): the wildcard host is one dual-stack socket for gRPC, so a port
    another process holds on 0.0.0.0 is in use for ``[::]`` too, though IPv6 alone is free."""
    from engine_service.transport.server import bind_error

    with _listening(socket.AF_INET, "0.0.0.0") as taken:
        port = taken.getsockname()[1]
        for host in ("[::]", "::", "", "0.0.0.0"):
            error = bind_error(host, port)
            assert isinstance(error, OSError) and error.errno == errno.EADDRINUSE, host


def test_a_wildcard_port_free_on_one_family_is_free():
    """bind_error: None when one of the addresses can be bound (gRPC then serves there): a port
    held on IPv6 alone leaves the IPv4 wildcard free, so the start goes on."""
    from engine_service.transport.server import bind_error

    with _listening(socket.AF_INET6, "::", v6only=True) as taken:
        assert bind_error("[::]", taken.getsockname()[1]) is None


def test_a_host_in_brackets_or_not_or_unknown_is_checked_as_grpc_takes_it():
    """bind_error takes --host as gRPC does: ``[::1]`` is the address ::1 (the brackets are
    gRPC's syntax, not part of a name), a name that does not resolve is an error saying so,
    and port 0 (any free port) is never in use."""
    from engine_service.transport.server import bind_error

    with _listening(socket.AF_INET6, "::1") as taken:
        port = taken.getsockname()[1]
        assert bind_error("[::1]", port).errno == errno.EADDRINUSE
    assert bind_error("[::1]", port) is None
    unknown = bind_error("no-such-host.invalid", port)
    assert isinstance(unknown, OSError) and "cannot resolve 'no-such-host.invalid'" in str(unknown)
    assert bind_error("no-such-host.invalid", 0) is None


def test_a_port_whose_last_connection_is_still_closing_is_free():
    """bind_error probes the port as gRPC binds it, with SO_REUSEADDR: an engine restarted on
    the port of one that just exited finds it free, though that one's closed connections still
    hold it for a minute (TIME_WAIT), as gRPC then binds it."""
    from engine_service.transport.server import bind_error

    with _listening(socket.AF_INET, "127.0.0.1", reuse=True) as previous:
        port = previous.getsockname()[1]
        with socket.create_connection(("127.0.0.1", port)):  # a client, closing after
            served, _ = previous.accept()
            served.close()  # the engine's side closes first: it keeps the port while closing
    with socket.socket() as plain, pytest.raises(OSError) as held:
        plain.bind(("127.0.0.1", port))
    assert held.value.errno == errno.EADDRINUSE  # the port is held, for a bind without the option
    assert bind_error("127.0.0.1", port) is None


@run
async def test_a_second_server_on_a_port_in_use_fails_to_start():
    """server.py: grpc.so_reuseport is off, so a second engine started on the port of one
    that serves fails loudly (docs/operations.md: a port in use ends the start) instead of
    silently sharing it, each getting some of the connections."""
    first = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1", port=0)
    port = await first.start()
    try:
        second = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1", port=port)
        try:
            with pytest.raises((OSError, RuntimeError)):
                await second.start()
        finally:
            await second.drain(grace_s=0)  # when it started after all
    finally:
        await first.drain(grace_s=1)


def test_the_handshake_timeout_is_a_channel_argument():
    assert ("grpc.server_handshake_timeout_ms", 20_000) in channel_options(ServerLimits())
    assert ("grpc.server_handshake_timeout_ms", 1_500) in \
        channel_options(ServerLimits(handshake_timeout_s=1.5))


def test_the_message_stream_and_queue_limits_are_channel_arguments():
    """docs/operations.md, Configuration: --max-receive-message-bytes (largest request),
    --max-send-message-bytes (largest response), --max-concurrent-streams (calls per HTTP/2
    connection) and --max-pending-requests (calls queued in a burst; every new call refused at
    twice it, gRPC's hard limit) are gRPC's limits as given: one left out would be gRPC's
    default, whatever the setting."""
    options = dict(channel_options(ServerLimits(max_receive_message_bytes=2048, max_send_message_bytes=8192,
                                                max_concurrent_streams=7, max_pending_requests=15)))
    assert (options["grpc.max_receive_message_length"], options["grpc.max_send_message_length"]) == (2048, 8192)
    assert options["grpc.max_concurrent_streams"] == 7
    assert options["grpc.server.max_pending_requests"] == 15
    assert options["grpc.server.max_pending_requests_hard_limit"] == 30


def test_keepalive_pings_both_ways_are_channel_arguments():
    """docs/api.md, Connecting (keepalive): the server pings an idle connection every
    --keepalive-time-s, with no call open too and for as long as it stays idle (so a dead
    client's connection is closed after --keepalive-time-s plus --keepalive-timeout-s,
    docs/operations.md), and a client may ping every 10 s without being sent GOAWAY "too
    many pings"."""
    options = dict(channel_options(ServerLimits(keepalive_time_s=11, keepalive_timeout_s=12)))
    assert (options["grpc.keepalive_time_ms"], options["grpc.keepalive_timeout_ms"]) == (11_000, 12_000)
    assert options["grpc.keepalive_permit_without_calls"] == 1
    assert options["grpc.http2.max_pings_without_data"] == 0  # 0: no limit
    assert options["grpc.http2.min_ping_interval_without_data_ms"] == 10_000


def test_serve_applies_the_handshake_timeout_setting(tmp_path):
    svc = Service(tmp_path, tmp_path / "e.db", "engine", CARDGAMES_HANDSHAKE_TIMEOUT_S="1")
    try:
        # closed within the guard, below the 20 s default the setting replaces
        elapsed, _ = asyncio.run(_closed_after(svc.port, b"", within=12.0))
        assert elapsed > 0.5, elapsed  # by the timeout, not refused at once
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
@run
async def test_a_connection_that_never_finishes_its_handshake_is_closed(tls, tmp_path):
    """A client that connects and sends nothing, or half of what it must (an HTTP/2 preface,
    a TLS ClientHello), is closed after --handshake-timeout-s: gRPC's default held each one
    60 s (plaintext) or 120 s (TLS), so a few connections a second held every descriptor.
    Meanwhile the server answers others."""
    server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1",
                        port=0, limits=ServerLimits(handshake_timeout_s=1.0),
                        tls=_certificate(tmp_path) if tls else None)
    port = await server.start()
    try:
        # the start of what the port expects, the rest never sent: a TLS record's header, or
        # the HTTP/2 preface (anything else is refused at once: the tests below)
        partial = bytes.fromhex("160301") if tls else PREFACE[:10]
        # closed within the guard (gRPC's own: 60 s, 120 s), by the timeout (not at once)
        stalled = [asyncio.ensure_future(_closed_after(port, data, within=30.0))
                   for data in (b"", partial)]
        await _serves_a_call(server, port, tls)
        for elapsed, _ in await asyncio.gather(*stalled):
            assert elapsed > 0.5, elapsed
    finally:
        await server.drain(grace_s=1)


# ---- idle connections -----------------------------------------------------------------------

def test_the_max_connection_idle_is_a_channel_argument_only_when_set():
    """docs/operations.md, Configuration: --max-connection-idle-s is 0 (off) or 1 to 86400
    seconds; its smallest value, 1, is applied as any other."""
    assert not [k for k, _ in channel_options(ServerLimits()) if k == "grpc.max_connection_idle_ms"]
    assert ("grpc.max_connection_idle_ms", 1_500) in channel_options(ServerLimits(max_connection_idle_s=1.5))
    assert ("grpc.max_connection_idle_ms", 1_000) in channel_options(ServerLimits(max_connection_idle_s=1.0))


def test_the_servers_own_limits_are_the_engines_documented_defaults():
    """A GrpcServer built without limits (the tests' harness, an embedding) has the limits
    serve has by default (docs/operations.md, Configuration: the defaults column), the
    request headers' 16 KiB included (Connections and file descriptors), and its drain the
    default --drain-grace-s."""
    import inspect
    from dataclasses import asdict

    from engine_service.settings import Settings

    limits, defaults = asdict(ServerLimits()), Settings()
    assert limits.pop("max_metadata_bytes") == 16 * 1024
    assert limits == {name: getattr(defaults, name) for name in limits}
    assert inspect.signature(GrpcServer.drain).parameters["grace_s"].default == defaults.drain_grace_s == 10


async def _state_within(channel: grpc.aio.Channel, wanted: grpc.ChannelConnectivity,
                        within: float) -> grpc.ChannelConnectivity:
    """The channel's state once it is ``wanted``, or as it is after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    state = channel.get_state()
    while state != wanted and loop.time() < end:
        try:
            await asyncio.wait_for(channel.wait_for_state_change(state), end - loop.time())
        except TimeoutError:
            break
        state = channel.get_state()
    return state


@pytest.mark.parametrize("idle_s", [1.0, 0.0], ids=["closed", "never"])
@run
async def test_an_idle_connection_is_sent_away_after_max_connection_idle(idle_s):
    """--max-connection-idle-s: a connection without a call for that long gets GOAWAY (the
    client's channel goes IDLE, and its next call reconnects); with 0 (the default) the
    connection stays up. The engine's default keepalive pings (30 s) do not come into it."""
    server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1",
                        port=0, limits=ServerLimits(max_connection_idle_s=idle_s))
    port = await server.start()
    try:
        # a channel of its own: no other test's connection shares the subchannel
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}",
                                             options=[("grpc.use_local_subchannel_pool", 1)]) as channel:
            stub = card_games_pb2_grpc.CardGamesServiceStub(channel)
            await stub.ListGames(pb.ListGamesRequest(), timeout=30)
            assert channel.get_state() == grpc.ChannelConnectivity.READY
            started = time.monotonic()
            state = await _state_within(channel, grpc.ChannelConnectivity.IDLE, within=30.0 if idle_s else 2.5)
            if idle_s:
                assert state == grpc.ChannelConnectivity.IDLE, state
                assert time.monotonic() - started >= idle_s * 0.5
            else:
                assert state == grpc.ChannelConnectivity.READY, state
            # either way the next call is served (over a new connection when sent away)
            games = await stub.ListGames(pb.ListGamesRequest(), timeout=30)
            assert [g.id for g in games.games] == ["g"]
            assert channel.get_state() == grpc.ChannelConnectivity.READY
    finally:
        await server.drain(grace_s=1)


async def _goaway_within(port: int, within: float) -> float | None:
    """Open an HTTP/2 connection that makes no call: the seconds until the server's GOAWAY
    frame, None when none came within ``within`` seconds (the frames are read one by one)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.monotonic()
    try:
        writer.write(PREFACE + _frame(4, 0, 0) + _frame(4, 1, 0))  # SETTINGS, SETTINGS ACK
        await writer.drain()
        while True:
            left = within - (time.monotonic() - started)
            if left <= 0:
                return None
            try:
                head = await asyncio.wait_for(reader.readexactly(9), left)
            except (TimeoutError, asyncio.IncompleteReadError):
                return None
            await reader.readexactly(int.from_bytes(head[:3], "big"))
            if head[3] == 7:
                return time.monotonic() - started
    finally:
        writer.close()


@pytest.mark.parametrize("idle", ["1", "0"])
def test_serve_applies_the_max_connection_idle_setting(idle, tmp_path):
    svc = Service(tmp_path, tmp_path / "e.db", "engine", CARDGAMES_MAX_CONNECTION_IDLE_S=idle)
    try:
        # a hang guard: no GOAWAY at all without the setting (the default: none)
        elapsed = asyncio.run(_goaway_within(svc.port, within=30.0 if idle != "0" else 2.5))
        if idle != "0":
            assert elapsed is not None and elapsed > 0.5, elapsed
        else:
            assert elapsed is None, elapsed
        assert svc.stop() == 0
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()


# ---- request headers ------------------------------------------------------------------------

@run
async def test_request_headers_have_one_limit_and_a_larger_call_is_refused_every_time():
    """Headers up to 16 KiB are accepted every time, larger ones refused every time with
    RESOURCE_EXHAUSTED, before the call reaches the engine; the connection serves on. With
    grpc's defaults a call with 12 KiB of headers (a proxy forwarding a browser's cookies)
    failed one time in two and succeeded when retried; just under 16 KiB, with the hard limit
    alone set (grpc's soft one then 80 % of it), most calls failed."""
    async with running(ScriptedService()) as srv:
        async with srv.channel_for() as channel:
            games = card_games_pb2_grpc.CardGamesServiceStub(channel)
            for size, calls in ((12_000, 30), (15_500, 10)):
                for _ in range(calls):
                    answer = await games.ListGames(pb.ListGamesRequest(), timeout=30,
                                                   metadata=(("x-cookies", "c" * size),))
                    assert [g.id for g in answer.games] == ["g"]
            for _ in range(5):
                err = await expect_error(games.ListGames(pb.ListGamesRequest(), timeout=30,
                                                         metadata=(("x-cookies", "c" * 17_000),)))
                assert err.code == grpc.StatusCode.RESOURCE_EXHAUSTED
                assert "metadata size exceeds" in err.message
            answer = await games.ListGames(pb.ListGamesRequest(), timeout=30)
            assert [g.id for g in answer.games] == ["g"]
        method = "/cardgames.v1.CardGamesService/ListGames"
        assert srv.metrics.value("cardgames_rpc_requests_total", {"method": method, "code": "OK"}) == 41
        assert srv.metrics.value("cardgames_rpc_requests_total",
                                 {"method": method, "code": "RESOURCE_EXHAUSTED"}) == 0


# ---- bytes that are not HTTP/2 ----------------------------------------------------------------

#: A TLS 1.2 ClientHello (record header, handshake header, version, random, no session id,
#: two cipher suites, no compression, no extension), as a TLS client sends first.
CLIENT_HELLO = (bytes.fromhex("16030100" "2f" "01" "00002b" "0303") + bytes(32)
                + bytes.fromhex("00" "0004c02fc030" "0100"))


@pytest.mark.parametrize("tls", [False, True], ids=["plaintext", "tls"])
@run
async def test_bytes_that_are_not_what_the_port_speaks_are_refused_at_once(tls, tmp_path):
    """Random bytes, an HTTP/1.1 request, a TLS ClientHello to the plaintext port, an HTTP/2
    preface to the TLS port: the connection is closed at once,
    and calls on other connections are answered meanwhile and afterwards."""
    server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1",
                        port=0, limits=ServerLimits(handshake_timeout_s=120.0),
                        tls=_certificate(tmp_path) if tls else None)
    port = await server.start()
    try:
        garbage = [bytes(range(256)) * 16, b"GET / HTTP/1.1\r\nHost: engine\r\n\r\n",
                   PREFACE + bytes.fromhex("000000040000000000") if tls else CLIENT_HELLO]
        # "at once" as an outcome: closed within a hang guard (30 s) far below the handshake
        # timeout (120 s here) that would close them otherwise
        results = await asyncio.gather(*(_closed_after(port, data, within=30.0) for data in garbage))
        for _, received in results:
            if not tls:  # the server's HTTP/2 SETTINGS frame (type 4), nothing else
                assert received[3] == 4 and len(received) < 100, received
        await _serves_a_call(server, port, tls)
    finally:
        await server.drain(grace_s=1)


def _knock(port: int, times: int) -> None:
    """Connections that speak HTTP/1.1 to the port, each closed once the server has closed it
    (a TLS port refuses them at once)."""
    for _ in range(times):
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"GET / HTTP/1.1\r\nHost: engine\r\n\r\n")
            s.settimeout(30)
            while s.recv(4096):
                pass


@pytest.mark.parametrize("verbosity", [None, "INFO"])
def test_connections_refused_by_the_tls_port_write_no_plain_lines_in_the_json_log(verbosity, tmp_path,
                                                                                  monkeypatch):
    """gRPC's C core wrote one plain "Handshake failed" line on stderr for every connection to
    the TLS port that was not TLS (a TCP health check, a port scanner): lines anyone could add
    to the JSON log. serve runs the core at GRPC_VERBOSITY=ERROR unless the environment says
    otherwise (INFO: the lines are back)."""
    monkeypatch.delenv("GRPC_VERBOSITY", raising=False)
    tls = _certificate(tmp_path)
    env = {"CARDGAMES_TLS_CERT": str(tls.cert), "CARDGAMES_TLS_KEY": str(tls.key)}
    if verbosity is not None:
        env["GRPC_VERBOSITY"] = verbosity
    svc = Service(tmp_path, tmp_path / "e.db", "engine", **env)
    try:
        _knock(svc.port, 5)
        assert svc.stop() == 0
        core = svc.grpc_core_lines()
        if verbosity is None:
            assert core == []
            assert svc.lines()[-1]["event"] == "exit"  # every line one JSON object
        else:
            assert sum("Handshake failed" in line for line in core) == 5, core
    finally:
        if svc.proc.poll() is None:
            svc.proc.kill()


# ---- TLS certificates renewed while the engine runs ---------------------------------------------

def _files_in_force(folder: Path, pem_cert: bytes, pem_key: bytes) -> tuple[CertificateFiles, Path, Path]:
    """``tls.crt`` and ``tls.key`` in ``folder`` holding the pair, and the CertificateFiles
    watching them (the pair read as the one in force)."""
    cert, key = folder / "tls.crt", folder / "tls.key"
    cert.write_bytes(pem_cert)
    key.write_bytes(pem_key)
    return CertificateFiles(cert, key), cert, key


def _pair(folder: Path, name: str) -> tuple[bytes, bytes]:
    """A new self-signed certificate for localhost and its key (PEM)."""
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", f"/CN=localhost/O={name}",
                    "-addext", "subjectAltName=DNS:localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert.read_bytes(), key.read_bytes()


def _replace(path: Path, data: bytes) -> None:
    """Write a file the way renewals do: a new file renamed into place."""
    tmp = path.with_suffix(".new")
    tmp.write_bytes(data)
    os.replace(tmp, path)


async def _presented(port: int) -> bytes:
    """The certificate (DER) the server presents to a new connection."""
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
    try:
        return writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()


def _der(pem: bytes) -> bytes:
    import ssl

    return ssl.PEM_cert_to_DER_cert(pem.decode())


async def _list_games(port: int, trusted: bytes) -> list[str]:
    creds = grpc.ssl_channel_credentials(root_certificates=trusted)
    async with grpc.aio.secure_channel(f"localhost:{port}", creds) as channel:
        answer = await card_games_pb2_grpc.CardGamesServiceStub(channel).ListGames(pb.ListGamesRequest(), timeout=30)
        return [g.id for g in answer.games]


@run
async def test_a_renewed_certificate_is_served_to_new_connections_without_a_restart(tmp_path):
    """The files were read once: a certificate renewed on disk (cert-manager, certbot) was
    served only after a restart, the old one until it expired. New connections now get the
    files' pair; a pair that does not match (the certificate written before its key) is not
    taken, and the engine serves on with the pair it has, saying so once."""
    from tests.sessions.helpers import capture_logs_with_context

    old_cert, old_key = _pair(tmp_path, "old")
    new_cert, new_key = _pair(tmp_path, "new")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(old_cert)
    key.write_bytes(old_key)
    with capture_logs_with_context() as logs:
        server = GrpcServer(ScriptedService(), metrics=Metrics(), admin_token=None, host="127.0.0.1",
                            port=0, tls=TlsFiles(cert, key))
        port = await server.start()
        try:
            assert await _presented(port) == _der(old_cert)
            assert [e["tls"] for e in logs if e["event"] == "grpc_server_started"] == [True]
            creds = grpc.ssl_channel_credentials(root_certificates=old_cert)
            async with grpc.aio.secure_channel(f"localhost:{port}", creds) as opened_before:
                games = card_games_pb2_grpc.CardGamesServiceStub(opened_before)
                await games.ListGames(pb.ListGamesRequest(), timeout=30)

                _replace(cert, new_cert)  # its key not yet: not a pair
                for _ in range(3):
                    assert await _presented(port) == _der(old_cert)
                assert await _list_games(port, old_cert) == ["g"]
                refused = [e for e in logs if e["event"] == "tls_reload_failed"]
                assert len(refused) == 1 and refused[0]["log_level"] == "warning", refused

                _replace(key, new_key)
                assert await _presented(port) == _der(new_cert)
                assert await _list_games(port, new_cert) == ["g"]
                async with grpc.aio.secure_channel(f"localhost:{port}", creds) as trusting_the_old:
                    err = await expect_error(card_games_pb2_grpc.CardGamesServiceStub(
                        trusting_the_old).ListGames(pb.ListGamesRequest(), timeout=30))
                assert err.code == grpc.StatusCode.UNAVAILABLE  # the old certificate is no longer served
                # a connection made before the renewal goes on
                assert [g.id for g in (await games.ListGames(pb.ListGamesRequest(), timeout=30)).games] == ["g"]
            assert [e["event"] for e in logs if e["event"].startswith("tls_")] == \
                ["tls_reload_failed", "tls_certificate_reloaded"]
        finally:
            await server.drain(grace_s=1)


def test_a_certificate_file_missing_for_a_moment_keeps_the_pair_in_force(tmp_path):
    """A renewal that removes a file before writing the new one: fetch() keeps the pair in
    force (None), warns once for as long as the file is missing, and takes the new pair."""
    from tests.sessions.helpers import capture_logs_with_context

    old_cert, old_key = _pair(tmp_path, "old")
    new_cert, new_key = _pair(tmp_path, "new")
    files, cert, key = _files_in_force(tmp_path, old_cert, old_key)
    with capture_logs_with_context() as logs:
        assert files.fetch() is None  # nothing changed
        cert.unlink()
        assert files.fetch() is None and files.fetch() is None
        assert [e["event"] for e in logs] == ["tls_reload_failed"]
        assert "cannot read" in logs[0]["error"]
        cert.write_bytes(new_cert)
        huge = tmp_path / "huge.crt"
        with open(huge, "wb") as f:  # sparse; read to its end it could have filled the memory
            f.truncate(1024 * 1024 + 1)
        os.replace(huge, cert)
        assert files.fetch() is None
        assert logs[-1]["error"] == f"{cert}: larger than 1 MiB"
        cert.write_bytes(new_cert)
        assert files.fetch() is None  # the certificate back, with another key: refused
        _replace(key, new_key)
        assert isinstance(files.fetch(), grpc.ServerCertificateConfiguration)
        assert files.fetch() is None
    assert [e["event"] for e in logs] == ["tls_reload_failed", "tls_reload_failed", "tls_reload_failed",
                                          "tls_certificate_reloaded"]


def test_a_certificate_rewritten_while_its_pair_is_checked_is_not_taken(tmp_path, monkeypatch):
    """tls.load_pair reads the files before and after Python's ssl module checks them: a file
    a renewal rewrote meanwhile is refused (a ValueError, so fetch() keeps the pair in force
    and tries again at a later handshake), never taken with bytes that were not checked."""
    from engine_service.transport import tls

    old_cert, old_key = _pair(tmp_path, "old")
    new_cert, _ = _pair(tmp_path, "new")
    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(old_cert)
    key.write_bytes(old_key)
    assert tls.load_pair(cert, key) == (old_cert, old_key)
    reads: list[Path] = []
    real_read = tls._read

    def read_while_renewed(path: Path) -> bytes:
        reads.append(path)
        if len(reads) == 3:  # the check is done: the certificate is replaced now
            cert.write_bytes(new_cert)
        return real_read(path)

    monkeypatch.setattr(tls, "_read", read_while_renewed)
    with pytest.raises(ValueError, match="the files changed while they were read"):
        tls.load_pair(cert, key)


def test_certificate_files_rewritten_with_the_same_pair_are_no_renewal(tmp_path):
    """docs/operations.md, TLS: a renewal is logged once as tls_certificate_reloaded. Files
    that changed state but hold the pair in force (touched, copied again by a sync that
    rewrites unchanged files) are no renewal: nothing is logged and the configuration in force
    is kept (fetch() None), at this handshake and the next."""
    from tests.sessions.helpers import capture_logs_with_context

    pem_cert, pem_key = _pair(tmp_path, "only")
    files, cert, key = _files_in_force(tmp_path, pem_cert, pem_key)
    with capture_logs_with_context() as logs:
        _replace(cert, pem_cert)
        _replace(key, pem_key)
        assert files.fetch() is None and files.fetch() is None
    assert [e["event"] for e in logs] == []


def test_a_certificate_missing_again_after_a_renewal_is_warned_about_again(tmp_path):
    """docs/operations.md, TLS: tls_reload_failed is logged once for a state of the files.
    A file missing at one renewal and then at the next is two such states, one warning each:
    the renewal taken in between ends the first."""
    from tests.sessions.helpers import capture_logs_with_context

    pairs = [_pair(tmp_path, name) for name in ("first", "second", "third")]
    files, cert, key = _files_in_force(tmp_path, *pairs[0])
    with capture_logs_with_context() as logs:
        for renewed_cert, renewed_key in pairs[1:]:
            cert.unlink()
            assert files.fetch() is None and files.fetch() is None
            _replace(key, renewed_key)
            _replace(cert, renewed_cert)
            assert isinstance(files.fetch(), grpc.ServerCertificateConfiguration)
    assert [e["event"] for e in logs] == ["tls_reload_failed", "tls_certificate_reloaded"] * 2


def test_a_key_missing_after_a_missing_certificate_is_another_state_warned_about(tmp_path):
    """docs/operations.md, TLS: tls_reload_failed once for a state of the files. A missing
    certificate, then the certificate back and the key missing, are two states: the second
    is warned about too, naming the key (every unreadable state counted as one, so the log's
    last error named the certificate that was back)."""
    from tests.sessions.helpers import capture_logs_with_context

    pem_cert, pem_key = _pair(tmp_path, "only")
    files, cert, key = _files_in_force(tmp_path, pem_cert, pem_key)
    with capture_logs_with_context() as logs:
        cert.unlink()
        assert files.fetch() is None and files.fetch() is None
        cert.write_bytes(pem_cert)
        key.unlink()
        assert files.fetch() is None and files.fetch() is None
    assert [(e["event"], e["error"]) for e in logs] == [
        ("tls_reload_failed", f"cannot read {cert}: No such file or directory"),
        ("tls_reload_failed", f"cannot read {key}: No such file or directory")]


def test_a_renewed_key_that_is_encrypted_is_refused_saying_so(tmp_path):
    """docs/operations.md, TLS: the key is unencrypted (gRPC takes no passphrase). A renewal
    that wrote an encrypted key is refused with that reason (tls_reload_failed's ``error``),
    never by OpenSSL asking a passphrase on the engine's terminal."""
    from engine_service.transport import tls

    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-passout", "pass:secret", "-days", "1", "-subj", "/CN=localhost",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True, timeout=60)
    assert b"ENCRYPTED" in key.read_bytes()
    with pytest.raises(ValueError, match="^the private key is encrypted$"):
        tls.load_pair(cert, key)


def test_a_key_of_another_certificate_is_refused_with_openssls_reason(tmp_path):
    """docs/operations.md, TLS: until the files make a pair, tls_reload_failed's ``error``
    says why: OpenSSL's reason (a key of another certificate: KEY_VALUES_MISMATCH)."""
    from engine_service.transport import tls

    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.write_bytes(_pair(tmp_path, "one")[0])
    key.write_bytes(_pair(tmp_path, "other")[1])
    with pytest.raises(ValueError) as refused:
        tls.load_pair(cert, key)
    assert str(refused.value) == "not a usable certificate and private key (KEY_VALUES_MISMATCH)"


def _padded(pem: bytes, size: int = 4096) -> bytes:
    """``pem`` after a line of text (PEM allows text before its BEGIN line) making ``size`` bytes."""
    return b"#" * (size - len(pem) - 1) + b"\n" + pem


@pytest.mark.parametrize("how", ["rewritten", "renamed"])
def test_a_renewal_that_keeps_the_files_sizes_is_taken(tmp_path, how):
    """docs/operations.md, TLS: certificates are read again when their files change. A file's
    state is its inode, size and modification time (tls.py): a renewal of the same size (a
    certificate and key of the same type and names mostly are) is taken all the same, written
    in place (a new modification time, the same inode) or a new file renamed into place (a
    new inode, its modification time kept as a copy that preserves times keeps it)."""
    old, new = _pair(tmp_path, "old"), _pair(tmp_path, "new")
    files = {tmp_path / "tls.crt": (old[0], new[0]), tmp_path / "tls.key": (old[1], new[1])}
    for path, (before, _) in files.items():
        path.write_bytes(_padded(before))
    watched = CertificateFiles(*files)
    for path, (_, after) in files.items():
        was = path.stat()
        if how == "rewritten":
            with open(path, "r+b") as f:
                f.write(_padded(after))
            os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns + 1_000_000_000))
        else:
            renewed = path.with_suffix(".new")
            renewed.write_bytes(_padded(after))
            os.utime(renewed, ns=(was.st_atime_ns, was.st_mtime_ns))
            os.replace(renewed, path)
        assert path.stat().st_size == was.st_size
    assert isinstance(watched.fetch(), grpc.ServerCertificateConfiguration)
    assert watched.fetch() is None  # taken once


def _kubernetes_secret(folder: Path, version: str, pem_cert: bytes, pem_key: bytes) -> None:
    """A Secret's files as the kubelet writes them (its atomic writer): the data in a new
    ``..VERSION`` directory, ``..data`` a link to it renamed into place, and ``tls.crt`` and
    ``tls.key`` links through ``..data`` that never change themselves."""
    data = folder / f"..{version}"
    data.mkdir()
    (data / "tls.crt").write_bytes(pem_cert)
    (data / "tls.key").write_bytes(pem_key)
    link = folder / "..data_tmp"
    link.symlink_to(data.name)
    os.replace(link, folder / "..data")
    for name in ("tls.crt", "tls.key"):
        if not (folder / name).is_symlink():
            (folder / name).symlink_to(f"..data/{name}")


def test_a_renewal_of_a_kubernetes_secret_through_its_links_is_taken(tmp_path):
    """tls.py: cert-manager rewrites a Kubernetes Secret's files; the kubelet swaps the
    ``..data`` link, so the ``tls.crt`` and ``tls.key`` links stay as they were and only the
    files they lead to are new. A file's state is that of the file the path leads to (``stat``,
    not ``lstat``), so the renewal is taken."""
    old, new = _pair(tmp_path, "old"), _pair(tmp_path, "new")
    mount = tmp_path / "secret"
    mount.mkdir()
    _kubernetes_secret(mount, "2026_01", *old)
    files = CertificateFiles(mount / "tls.crt", mount / "tls.key")
    assert files.fetch() is None
    _kubernetes_secret(mount, "2026_02", *new)
    assert isinstance(files.fetch(), grpc.ServerCertificateConfiguration)
    assert files._pair == new


def test_a_rewrite_in_place_that_keeps_the_modification_time_but_not_the_size_is_taken(tmp_path):
    """tls.py: a file's state is its inode, size *and* modification time. A file rewritten in
    place (the same inode) whose modification time was put back (a copy that preserves times
    over the old file) but whose size changed is a new state, and the renewal is taken."""
    old, new = _pair(tmp_path, "old"), _pair(tmp_path, "new")
    files, cert, key = _files_in_force(tmp_path, _padded(old[0]), old[1])
    for path, data in ((cert, _padded(new[0], 4000)), (key, new[1])):
        was = path.stat()
        with open(path, "r+b") as f:
            f.write(data)
            f.truncate()
        os.utime(path, ns=(was.st_atime_ns, was.st_mtime_ns))
        assert (path.stat().st_ino, path.stat().st_mtime_ns) == (was.st_ino, was.st_mtime_ns)
    assert cert.stat().st_size != 4096
    assert isinstance(files.fetch(), grpc.ServerCertificateConfiguration)
    assert files._pair == (_padded(new[0], 4000), new[1])


def test_files_in_the_state_already_taken_are_not_read_again(tmp_path, monkeypatch):
    """tls.py: at each handshake the files are read only when they changed, "a ``stat`` of
    each otherwise": neither the pair in force at start nor a renewal once taken is read and
    checked again at every new connection."""
    from engine_service.transport import tls

    old, new = _pair(tmp_path, "old"), _pair(tmp_path, "new")
    files, cert, key = _files_in_force(tmp_path, *old)
    loads: list[tuple[Path, Path]] = []
    real_load = tls.load_pair
    monkeypatch.setattr(tls, "load_pair", lambda c, k: loads.append((c, k)) or real_load(c, k))
    assert files.fetch() is None and files.fetch() is None
    assert loads == []
    _replace(cert, new[0])
    _replace(key, new[1])
    assert isinstance(files.fetch(), grpc.ServerCertificateConfiguration)
    assert files.fetch() is None and files.fetch() is None
    assert loads == [(cert, key)]


def test_the_reload_lines_name_both_files_at_their_levels(tmp_path):
    """docs/operations.md, Logs: ``tls_certificate_reloaded`` (info) and ``tls_reload_failed``
    (warning), with ``cert``, ``key`` and (a failure) the ``error`` saying why."""
    from tests.sessions.helpers import capture_logs_with_context

    old, new = _pair(tmp_path, "old"), _pair(tmp_path, "new")
    files, cert, key = _files_in_force(tmp_path, *old)
    with capture_logs_with_context() as logs:
        _replace(key, new[1])
        assert files.fetch() is None
        _replace(cert, new[0])
        assert files.fetch() is not None
    failed, reloaded = logs
    assert {k: failed[k] for k in ("event", "log_level", "cert", "key", "error")} == {
        "event": "tls_reload_failed", "log_level": "warning", "cert": str(cert), "key": str(key),
        "error": "not a usable certificate and private key (KEY_VALUES_MISMATCH)"}
    assert reloaded == {"event": "tls_certificate_reloaded", "log_level": "info", "cert": str(cert),
                        "key": str(key)}


@pytest.mark.parametrize("which, how, reason", [
    ("key", "removed", "No such file or directory"),
    ("cert", "a link to itself", "Too many levels of symbolic links"),
])
def test_a_file_that_cannot_be_looked_at_is_named_in_the_warning(tmp_path, which, how, reason):
    """docs/operations.md, TLS: until both files make a pair the engine serves the pair it
    has, and ``tls_reload_failed``'s ``error`` says why: which file cannot be read and the
    system's reason, the key as well as the certificate, a link that loops as well as a file
    missing."""
    from tests.sessions.helpers import capture_logs_with_context

    files, cert, key = _files_in_force(tmp_path, *_pair(tmp_path, "only"))
    path = {"cert": cert, "key": key}[which]
    with capture_logs_with_context() as logs:
        path.unlink()
        if how == "a link to itself":
            path.symlink_to(path.name)
        assert files.fetch() is None
    assert [(e["event"], e["error"]) for e in logs] == [("tls_reload_failed", f"cannot read {path}: {reason}")]


def test_a_certificate_replaced_by_a_pipe_is_refused_without_waiting_for_a_writer(tmp_path):
    """docs/operations.md, TLS: a certificate that is not a regular file (a pipe) is refused;
    the files are read again by name at every renewal, so a pipe is refused before it is read
    (it would block the handshake's thread until something wrote to it)."""
    import threading

    from tests.sessions.helpers import capture_logs_with_context

    files, cert, key = _files_in_force(tmp_path, *_pair(tmp_path, "only"))
    cert.unlink()
    os.mkfifo(cert)
    fetched: list = []
    with capture_logs_with_context() as logs:
        thread = threading.Thread(target=lambda: fetched.append(files.fetch()), daemon=True)
        thread.start()
        thread.join(30)
    assert fetched == [None], "fetch() is still waiting for a writer"
    assert [(e["event"], e["error"]) for e in logs] == [
        ("tls_reload_failed", f"{cert}: a pipe, not a regular file")]


@pytest.mark.parametrize("back_for_the_error, refusal", [
    (False, "cannot read {key}: No such file or directory"),
    (True, "the files changed while they were read (No such file or directory)"),
])
def test_a_file_removed_while_its_pair_is_checked_is_named_or_the_pair_refused(
        tmp_path, monkeypatch, back_for_the_error, refusal):
    """tls.load_pair: a key gone between its read and Python's ssl check (a renewal removing
    it) is a ValueError naming it, as a file missing before (ssl's own error names no file:
    it said ``cannot read None``), so fetch() keeps the pair in force saying which file; a key
    back by the time the error is looked into (a renewal's remove-then-write) is a ValueError
    too: the files changed while they were read, and the pair read is not taken, since ssl
    never checked it."""
    from engine_service.transport import tls

    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    pem_cert, pem_key = _pair(tmp_path, "only")
    cert.write_bytes(pem_cert)
    key.write_bytes(pem_key)
    real_read = tls._read
    reads: list[Path] = []

    def gone_for_the_check(path: Path) -> bytes:
        reads.append(path)
        if len(reads) == 3 and back_for_the_error:  # after ssl's failed check
            key.write_bytes(pem_key)
        data = real_read(path)
        if len(reads) == 2:  # both read: the key goes before the check
            key.unlink()
        return data

    monkeypatch.setattr(tls, "_read", gone_for_the_check)
    with pytest.raises(ValueError) as refused:
        tls.load_pair(cert, key)
    assert str(refused.value) == refusal.format(key=key)


# ---- the metrics endpoint ---------------------------------------------------------------------

def test_the_metrics_endpoint_closes_a_connection_that_sends_nothing(capsys):
    """prometheus_client's handler waited for a request for ever, a thread and a descriptor
    held per silent connection on a port that listens on every address by default. The
    connection is now closed after the read timeout, quietly (socketserver printed a
    traceback on stderr for each), and scrapes are answered meanwhile. Closed by that timeout:
    not before it (a refusal over the connection limit is at once), and within the reads' hang
    guard (30 s; without the timeout, never)."""
    import threading

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport.fdlimits import start_metrics_server
    from tests.sessions.helpers import capture_logs_with_context

    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = start_metrics_server(0, "127.0.0.1", registry, read_timeout_s=0.5)
    threads = threading.active_count()
    with capture_logs_with_context() as logs:
        try:
            started = time.monotonic()
            silent = [socket.create_connection(("127.0.0.1", httpd.server_port)) for _ in range(5)]
            with socket.create_connection(("127.0.0.1", httpd.server_port)) as reset:
                reset.sendall(b"GET /metr")  # then gone with a reset: quiet too
                reset.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            with socket.create_connection(("127.0.0.1", httpd.server_port)) as scrape:
                scrape.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                scrape.settimeout(30)
                answer = b""
                while chunk := scrape.recv(65536):
                    answer += chunk
            assert answer.startswith(b"HTTP/1.0 200") and b"probe_total 1.0" in answer
            for s in silent:
                s.settimeout(30)
                assert s.recv(10) == b""  # closed by the server
                s.close()
            assert time.monotonic() - started >= 0.5
            _until(lambda: threading.active_count() <= threads, timeout=30)
        finally:
            httpd.shutdown()
    assert "Traceback" not in capsys.readouterr().err
    assert logs == []  # a timed-out or reset connection is nothing to report


def _scrape(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port)) as scrape:
        scrape.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        scrape.settimeout(30)  # a hang guard
        answer = b""
        while chunk := scrape.recv(65536):
            answer += chunk
    return answer


def test_the_metrics_endpoint_closes_a_connection_that_sends_its_request_byte_by_byte():
    """A slowloris: a byte of the request line every 0.2 s, each within the read timeout
    (0.5 s). The timeout was per read, so such a connection held its thread and descriptor
    for as long as its sender liked (a byte every few seconds: days, and as many connections
    as it opened). The whole request must come within the timeout of the accept: the server
    closes the connection while the request is still coming (the request takes 26 s), not
    before the timeout. No upper bound on when: a loaded machine may be late to notice."""
    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport.fdlimits import start_metrics_server

    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = start_metrics_server(0, "127.0.0.1", registry, read_timeout_s=0.5)
    try:
        with socket.create_connection(("127.0.0.1", httpd.server_port)) as slow:
            started = time.monotonic()
            closed_after = None
            for byte in b"GET /metrics HTTP/1.0\r\nX-Slow: " + b"x" * 100:
                time.sleep(0.2)
                try:
                    slow.sendall(bytes([byte]))
                except OSError:  # reset: the server closed it
                    closed_after = time.monotonic() - started
                    break
                slow.setblocking(False)
                try:
                    if slow.recv(10) == b"":  # EOF: the server closed it
                        closed_after = time.monotonic() - started
                        break
                except BlockingIOError:
                    pass
                finally:
                    slow.setblocking(True)
            assert closed_after is not None, "the whole request was let in, a byte at a time"
            assert closed_after >= 0.5, closed_after
        assert b"probe_total 1.0" in _scrape(httpd.server_port)  # a real scrape is answered
    finally:
        httpd.shutdown()


def test_a_request_read_starts_no_read_once_its_deadline_is_gone():
    """The deadline is for the whole request, even when every read finds bytes waiting: a
    client sending header bytes as fast as it can never makes a read wait, so no read times
    out; the next read after the deadline is refused (TimeoutError, a quiet end) without
    reading, and before it each read may wait only the time left."""
    from engine_service.transport.fdlimits import _DeadlineReader

    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(b"GET /metrics HTTP/1.0\r\n")
        buffer = bytearray(4)
        late = _DeadlineReader(ours.makefile("rb", buffering=0), ours, time.monotonic() - 0.001)
        with pytest.raises(TimeoutError):
            late.readinto(buffer)
        in_time = _DeadlineReader(ours.makefile("rb", buffering=0), ours, time.monotonic() + 100)
        assert in_time.readinto(buffer) == 4 and bytes(buffer) == b"GET "  # the late one read nothing
        assert 90 < ours.gettimeout() <= 100  # the time left, not the handler's whole timeout (10 s)


def test_a_connections_request_deadline_is_the_read_timeout_from_its_accept(monkeypatch):
    """Each connection's reads share one deadline, ``read_timeout_s`` after the connection is
    set up (not a multiple of it): measured as the deadline the connection's reader gets, as a
    wait for the close would need an upper bound a loaded machine can miss."""
    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport import fdlimits

    given: list[float] = []

    class Recorded(fdlimits._DeadlineReader):
        def __init__(self, raw, sock, deadline: float) -> None:
            given.append(deadline - time.monotonic())
            super().__init__(raw, sock, deadline)

    monkeypatch.setattr(fdlimits, "_DeadlineReader", Recorded)
    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = fdlimits.start_metrics_server(0, "127.0.0.1", registry, read_timeout_s=5.0)
    try:
        assert b"probe_total 1.0" in _scrape(httpd.server_port)
    finally:
        httpd.close()
    assert len(given) == 1 and 0 < given[0] <= 5.0, given


def test_a_connection_in_progress_holds_neither_the_close_nor_the_exit():
    """A connection still being served (here a silent one, its read timeout 120 s away) is
    served on a daemon thread: the endpoint's close() (the engine's drain) returns without
    waiting for it, and it never holds the process at its exit."""
    import threading

    from prometheus_client import CollectorRegistry

    from engine_service.transport.fdlimits import start_metrics_server

    httpd = start_metrics_server(0, "127.0.0.1", CollectorRegistry(), read_timeout_s=120.0)
    served = []
    serve = httpd.process_request_thread

    def recorded(request, client_address):
        served.append(threading.current_thread())
        serve(request, client_address)

    httpd.process_request_thread = recorded
    with socket.create_connection(("127.0.0.1", httpd.server_port)):
        _until(lambda: served, timeout=30)
        assert served[0].daemon
        closer = threading.Thread(target=httpd.close, daemon=True)
        closer.start()
        closer.join(30.0)  # a hang guard: the connection's timeout is 120 s away
        assert not closer.is_alive(), "close() waited for the connection in progress"


def test_a_burst_of_connections_waits_in_the_kernels_queue_not_for_syn_retries(monkeypatch):
    """While the endpoint is not accepting (busy, or out of descriptors), connections wait in
    its listen queue: 64 of them connect at once. socketserver's queue of 5 left the rest
    without an answer to their SYN, each connection then a second or more late (the kernel's
    retry), here refused by the connect's timeout."""
    import threading

    from prometheus_client import CollectorRegistry

    from engine_service.transport import fdlimits

    accepting = threading.Event()
    handle = fdlimits.MetricsHttpServer._handle_request_noblock

    def held(self):
        accepting.wait()
        handle(self)

    monkeypatch.setattr(fdlimits.MetricsHttpServer, "_handle_request_noblock", held)
    httpd = fdlimits.start_metrics_server(0, "127.0.0.1", CollectorRegistry(), max_connections=100)
    burst: list[socket.socket] = []
    try:
        for _ in range(64):
            burst.append(socket.create_connection(("127.0.0.1", httpd.server_port), timeout=1.0))
    finally:
        accepting.set()
        for s in burst:
            s.close()
        httpd.close()


def test_the_metrics_endpoint_serves_a_bounded_number_of_connections_at_once():
    """Each connection held a thread and a descriptor until its request came or timed out,
    and a sender could open as many as it liked meanwhile (the descriptors the gRPC port
    needs). Past ``max_connections`` a new connection is closed at once; the others are
    served, and once they are gone, scrapes are answered again. "At once" is an outcome, not
    a time: the read timeout (120 s) is far past the reads' hang guard (30 s), so a
    connection the server closed within the guard was refused, not timed out. The endpoint's
    connection threads are counted as they serve (the process's thread count also moved with
    other tests' threads ending: a fresh-clone run waited for ever for a fourth)."""
    import threading

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport.fdlimits import start_metrics_server

    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = start_metrics_server(0, "127.0.0.1", registry, read_timeout_s=120.0, max_connections=3)
    serving, count = [], threading.Lock()
    serve = httpd.process_request_thread

    def counted(request, client_address):  # a connection's thread, while it serves
        with count:
            serving.append(client_address)
        try:
            serve(request, client_address)
        finally:
            with count:
                serving.remove(client_address)

    httpd.process_request_thread = counted
    try:
        silent = [socket.create_connection(("127.0.0.1", httpd.server_port)) for _ in range(3)]
        _until(lambda: len(serving) == 3, timeout=30)
        extra = [socket.create_connection(("127.0.0.1", httpd.server_port)) for _ in range(5)]
        for s in extra:
            s.settimeout(30)  # a hang guard: the read timeout would close it after 120 s
            try:
                assert s.recv(10) == b""
            except ConnectionResetError:
                pass
            s.close()
        assert len(serving) == 3  # the refused ones got no thread
        for s in silent:
            s.close()
        _until(lambda: not serving, timeout=30)
        assert b"probe_total 1.0" in _scrape(httpd.server_port)
    finally:
        httpd.shutdown()


def test_a_connection_whose_thread_cannot_start_is_closed_logged_and_gives_its_slot_back(monkeypatch):
    """When no thread can be started for a connection (``can't start new thread``: a process
    at its thread or memory limit), the connection is closed, the failure is one log line
    (not socketserver's traceback on stderr among the JSON lines), and its slot comes back:
    with ``max_connections=1`` the next scrape is answered (each such failure would otherwise
    hold a slot for good, and after ``max_connections`` of them no scrape were served)."""
    import socketserver

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport.fdlimits import start_metrics_server
    from tests.sessions.helpers import capture_logs_with_context

    original = socketserver.ThreadingMixIn.process_request
    failures = [RuntimeError("can't start new thread")]

    def flaky(self, request, client_address):
        if failures:
            raise failures.pop()
        return original(self, request, client_address)

    monkeypatch.setattr(socketserver.ThreadingMixIn, "process_request", flaky)
    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = start_metrics_server(0, "127.0.0.1", registry, max_connections=1)
    try:
        with capture_logs_with_context() as logs:
            with socket.create_connection(("127.0.0.1", httpd.server_port)) as unserved:
                unserved.settimeout(30)  # a hang guard
                assert unserved.recv(10) == b""
            assert b"probe_total 1.0" in _scrape(httpd.server_port)
    finally:
        httpd.close()
    assert [(e["event"], e["error_type"], e["error"]) for e in logs] == [
        ("metrics_request_failed", "RuntimeError", "can't start new thread")]


@pytest.mark.parametrize("episodes", [
    [[errno.ECONNABORTED]],  # a connection reset before its accept: no exhaustion at all
    [[errno.EMFILE, errno.EMFILE], [errno.ENFILE]],  # two episodes, each counted from 0
    [[errno.ENOBUFS], [errno.ENOMEM]],  # no kernel memory for a socket: the same wait
])
def test_an_accept_out_of_descriptors_is_one_episode_counted_and_ended_by_a_served_scrape(
        monkeypatch, episodes):
    """Only EMFILE, ENFILE, ENOBUFS and ENOMEM mean "out of descriptors": one
    ``open_files_exhausted`` warning per episode (and a pause before the next accept), then
    ``open_files_available`` with the port and the failed accepts of that episode once an
    accept succeeds. Another accept error (ECONNABORTED) is dropped at once, unlogged."""
    import socketserver

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport import fdlimits
    from tests.sessions.helpers import capture_logs_with_context

    monkeypatch.setattr(fdlimits, "ACCEPT_RETRY_S", 0.01)
    original = socketserver.TCPServer.get_request
    failures: list[OSError] = []

    def flaky(self):
        if failures:
            raise failures.pop()
        return original(self)

    monkeypatch.setattr(socketserver.TCPServer, "get_request", flaky)
    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = fdlimits.start_metrics_server(0, "127.0.0.1", registry)
    started = time.monotonic()
    try:
        with capture_logs_with_context() as logs:
            for errors in episodes:
                failures[:] = [OSError(e, os.strerror(e)) for e in errors]
                assert b"probe_total 1.0" in _scrape(httpd.server_port)
                assert failures == []
    finally:
        httpd.close()
    elapsed = time.monotonic() - started
    expected = []
    for errors in episodes:
        if errors[0] != errno.ECONNABORTED:
            expected += [("open_files_exhausted", httpd.server_port, None, os.strerror(errors[-1])),
                         ("open_files_available", httpd.server_port, len(errors), None)]
    assert [(e["event"], e["port"], e.get("failed_accepts"), e.get("error")) for e in logs] == expected
    # how long the episode lasted: within the test's own span (not a speed bound)
    assert all(0 <= e["exhausted_s"] <= elapsed + 0.05 for e in logs if e["event"] == "open_files_available")


def test_a_pause_out_of_descriptors_does_not_hold_the_close(monkeypatch):
    """The engine's drain closes the metrics endpoint while it may be pausing out of
    descriptors: the close ends the pause at once instead of waiting it out (a pause of 60 s
    here, past the close's hang guard)."""
    import socketserver
    import threading

    from prometheus_client import CollectorRegistry

    from engine_service.transport import fdlimits
    from tests.sessions.helpers import capture_logs_with_context

    monkeypatch.setattr(fdlimits, "ACCEPT_RETRY_S", 60.0)
    failures = [OSError(errno.EMFILE, os.strerror(errno.EMFILE))]
    original = socketserver.TCPServer.get_request

    def flaky(self):
        if failures:
            raise failures.pop()
        return original(self)

    monkeypatch.setattr(socketserver.TCPServer, "get_request", flaky)
    httpd = fdlimits.start_metrics_server(0, "127.0.0.1", CollectorRegistry())
    closer = threading.Thread(target=httpd.close, daemon=True)
    with capture_logs_with_context() as logs:
        with socket.create_connection(("127.0.0.1", httpd.server_port)):
            _until(lambda: any(e["event"] == "open_files_exhausted" for e in logs), timeout=30)
            closer.start()
            closer.join(30.0)
    assert not closer.is_alive(), "close() waited for the pause to end"


def test_a_closed_metrics_endpoint_lets_its_port_go():
    """``close()`` (serve's drain and failed starts) stops serving and unbinds the port:
    ``shutdown()`` alone left it bound until the process exited, and a successor given the
    database could not listen on it; its serving thread ends (polling a closed socket, it would
    spin). Closing twice is harmless."""
    import threading

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport.fdlimits import start_metrics_server

    def serving() -> int:
        return sum(t.name == "metrics-http" for t in threading.enumerate())

    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    before = serving()
    httpd = start_metrics_server(0, "127.0.0.1", registry)
    port = httpd.server_port
    try:
        assert serving() == before + 1
        # a daemon: a scrape in progress never holds the process at its exit
        assert all(t.daemon for t in threading.enumerate() if t.name == "metrics-http")
    finally:
        httpd.close()
    httpd.close()
    _until(lambda: serving() == before)
    successor = start_metrics_server(port, "127.0.0.1", registry)
    try:
        assert b"probe_total 1.0" in _scrape(port)
    finally:
        successor.close()


def test_an_idle_metrics_endpoint_does_not_poll_and_its_close_wakes_it_at_once(monkeypatch):
    """The serving loop waits on its sockets without a timeout (a pass of the loop is one
    ``service_actions`` call: none while idle), and ``close()`` wakes it: the loop looked for a
    stop request every 0.05 s (socketserver's every 0.5 s), and every engine's stop waited for
    the next look (45 ms of an idle engine's ~100 ms from SIGTERM to exit). A scrape is still
    served, and the close returns (on a thread: a loop nothing wakes would hold the test)."""
    import threading

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport import fdlimits

    passes: list[float] = []
    monkeypatch.setattr(fdlimits.MetricsHttpServer, "service_actions",
                        lambda self: passes.append(time.monotonic()))
    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = fdlimits.start_metrics_server(0, "127.0.0.1", registry)
    closer = threading.Thread(target=httpd.close, daemon=True)
    try:
        assert b"probe_total 1.0" in _scrape(httpd.server_port)
        _until(lambda: passes, step=0.005)  # the scrape's pass
        seen = len(passes)
        time.sleep(0.15)  # idle: three looks at the old pace
        assert len(passes) == seen == 1, passes
    finally:
        started = time.monotonic()
        closer.start()
        closer.join(10.0)
    assert not closer.is_alive(), "close() waited for a loop that nothing woke"
    assert time.monotonic() - started < 2.0  # at once; a bound a loaded machine cannot reach


def test_a_metrics_port_in_use_is_an_oserror_that_leaves_no_descriptor_open():
    """A port that cannot be bound is the OSError serve logs as ``metrics_port_unavailable``
    (socketserver closes the server on it, the socket pair that wakes its loop too), and the
    descriptors the attempt opened are closed again."""
    from prometheus_client import CollectorRegistry

    from engine_service.transport.fdlimits import start_metrics_server

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        before = len(os.listdir("/proc/self/fd"))
        with pytest.raises(OSError) as refused:
            start_metrics_server(taken.getsockname()[1], "127.0.0.1", CollectorRegistry())
        assert refused.value.errno == errno.EADDRINUSE
        assert len(os.listdir("/proc/self/fd")) == before


def test_the_metrics_address_may_be_an_ipv6_address_in_brackets():
    """``--metrics-host [::]``, written as ``--host`` takes its default, serves the metrics on
    every address (a scrape over IPv4 and over IPv6 answers); it used to stop the engine with
    metrics_port_unavailable "Name or service not known", as if the port were the problem. An
    address that does not resolve is an OSError naming it, which serve logs with the host."""
    import urllib.request

    from prometheus_client import CollectorRegistry, Counter

    from engine_service.transport.fdlimits import start_metrics_server

    registry = CollectorRegistry()
    Counter("probe", "a sample", registry=registry).inc()
    httpd = start_metrics_server(0, "[::]", registry)
    try:
        for host in ("127.0.0.1", "[::1]"):
            with urllib.request.urlopen(f"http://{host}:{httpd.server_port}/metrics", timeout=30) as reply:
                assert b"probe_total 1.0" in reply.read(), host
    finally:
        httpd.shutdown()
    with pytest.raises(OSError, match="cannot resolve the metrics address 'no-such-host.invalid'"):
        start_metrics_server(0, "no-such-host.invalid", registry)
    # the address as the operator wrote it; and brackets only as a pair around the whole of it
    with pytest.raises(OSError, match=r"cannot resolve the metrics address '\[no-such-host.invalid\]'"):
        start_metrics_server(0, "[no-such-host.invalid]", registry)
    with pytest.raises(OSError, match=r"cannot resolve the metrics address '\[::1'"):
        start_metrics_server(0, "[::1", registry)


def test_an_unlimited_open_files_limit_is_not_low():
    import resource

    from engine_service.transport.fdlimits import open_files_fields, too_few_open_files

    assert too_few_open_files(1024) and too_few_open_files(4095)
    assert not too_few_open_files(4096) and not too_few_open_files(resource.RLIM_INFINITY)
    assert open_files_fields(resource.RLIM_INFINITY, resource.RLIM_INFINITY) == \
        {"max_open_files": -1, "max_open_files_hard": -1}


def test_the_metrics_endpoints_own_limits_are_the_documented_ones():
    """docs/operations.md, "Connections and file descriptors": a connection whose whole
    request has not come within 10 s of its accept is closed, at most 32 are served at once,
    and out of descriptors the endpoint pauses 0.5 s between attempts (gRPC: 1 s)."""
    from prometheus_client import CollectorRegistry

    from engine_service.transport import fdlimits

    httpd = fdlimits.start_metrics_server(0, "127.0.0.1", CollectorRegistry())
    try:
        assert httpd.RequestHandlerClass.timeout == 10.0
        assert httpd.max_connections == 32
        assert fdlimits.ACCEPT_RETRY_S == 0.5
    finally:
        httpd.close()


class _Limits:
    """A stand-in for the ``resource`` module's RLIMIT_NOFILE: the limits in force, the
    kernel's answer to a change (``refusal``: its exception), ``infinity`` as the platform
    spells it (Linux -1, macOS 2**63 - 1)."""

    RLIMIT_NOFILE = 7

    def __init__(self, soft: int, hard: int, *, infinity: int = -1, refusal: Exception | None = None) -> None:
        self.RLIM_INFINITY = infinity
        self.limits = (soft, hard)
        self.refusal = refusal
        self.asked: list[tuple[int, int]] = []

    def getrlimit(self, which: int) -> tuple[int, int]:
        assert which == self.RLIMIT_NOFILE
        return self.limits

    def setrlimit(self, which: int, limits: tuple[int, int]) -> None:
        assert which == self.RLIMIT_NOFILE
        self.asked.append(limits)
        if self.refusal is not None:
            raise self.refusal
        self.limits = limits


@pytest.mark.parametrize("soft, hard, refusal, got", [
    (1024, 524288, None, (524288, 524288)),  # systemd's and Docker's: raised to the hard one
    (1024, 524288, ValueError("not allowed"), (1024, 524288)),  # refused: as it was
    (1024, 524288, PermissionError(1, "Operation not permitted"), (1024, 524288)),
    (1024, -1, None, (1024, -1)),  # an unlimited hard limit is no number to raise to: left
    (-1, -1, None, (-1, -1)),
    (65536, 65536, None, (65536, 65536)),
])
def test_the_soft_open_files_limit_is_raised_to_a_numeric_hard_limit_or_left(monkeypatch, soft, hard, refusal, got):
    """raise_open_files_limit(): the soft limit becomes the hard one, and the (soft, hard)
    returned are the ones in force afterwards: the old ones where the kernel refused (the
    start goes on, and warns of a low limit), or where the hard limit is "unlimited", which no
    kernel takes as a soft limit (it would refuse: Linux caps at fs.nr_open)."""
    from engine_service.transport import fdlimits

    limits = _Limits(soft, hard, refusal=refusal)
    monkeypatch.setattr(fdlimits, "resource", limits)
    assert fdlimits.raise_open_files_limit() == got == limits.limits
    assert all(asked == (hard, hard) for asked in limits.asked)
    if hard == -1:
        assert limits.asked == []


def test_an_unlimited_open_files_limit_is_logged_as_minus_one_everywhere(monkeypatch):
    """"Unlimited" is -1 in the log fields whatever number the platform uses for it (macOS:
    2**63 - 1, a number no operator reads as unlimited), and is never a low limit."""
    from engine_service.transport import fdlimits

    infinity = 2**63 - 1
    monkeypatch.setattr(fdlimits, "resource", _Limits(infinity, infinity, infinity=infinity))
    assert fdlimits.open_files_fields(infinity, infinity) == {"max_open_files": -1, "max_open_files_hard": -1}
    assert fdlimits.open_files_fields(1024, infinity) == {"max_open_files": 1024, "max_open_files_hard": -1}
    assert not fdlimits.too_few_open_files(infinity) and fdlimits.too_few_open_files(1024)


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One HTTP/2 frame (RFC 9113 section 4.1)."""
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + stream.to_bytes(4, "big") + payload


@run
async def test_a_ping_flood_is_sent_away_and_others_are_served():
    """PING frames as fast as a client can send them: the engine answers GOAWAY
    (too_many_pings: grpc.http2.min_ping_interval_without_data_ms, two strikes) and closes
    the connection, and serves the other connections."""
    async with running(ScriptedService()) as srv:
        reader, writer = await asyncio.open_connection("127.0.0.1", srv.server.port)
        writer.write(PREFACE + _frame(4, 0, 0) + _frame(4, 1, 0))  # SETTINGS, SETTINGS ACK
        writer.write(_frame(6, 0, 0, b"pingping") * 500)
        await writer.drain()
        received = await asyncio.wait_for(reader.read(), 30)  # until the server closes
        writer.close()
        goaway = received.find(b"\x07\x00\x00\x00\x00\x00")  # a GOAWAY frame on stream 0
        assert goaway >= 3 and b"too_many_pings" in received[goaway:], received[-80:]
        answer = await srv.games.ListGames(pb.ListGamesRequest(), timeout=30)
        assert [g.id for g in answer.games] == ["g"]
