"""Connections as a production port meets them: a process out of file descriptors, clients
that connect and never finish the handshake, bytes that are not HTTP/2, oversized headers.

The engine must keep serving the connections it has, never spin a core, recover by itself,
close what will never become a call within a bounded time, and tell the operator (logs,
metrics) instead of failing silently. docs/operations.md, "Connections and file descriptors".
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import time
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from engine_service.observability.metrics import Metrics
from engine_service.transport.generated import card_games_pb2 as pb, card_games_pb2_grpc
from engine_service.transport.server import GrpcServer, ServerLimits, TlsFiles, channel_options

from .engine_process import Service
from .harness import expect_error, run, running
from .test_edge import ScriptedService

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def _cpu_s(pid: int) -> float:
    """User + system CPU time of a process, in seconds (/proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _limits(pid: int) -> tuple[int, int]:
    for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
        if line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            return int(soft), int(hard)
    raise AssertionError("no 'Max open files' line")


def _health(target: str, timeout: float = 3.0, channel: grpc.Channel | None = None) -> object:
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


def _until(predicate, timeout: float = 10.0, step: float = 0.05) -> None:
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


def test_out_of_file_descriptors_the_engine_serves_its_connections_without_spinning(tmp_path):
    """More connections than the process may open: the calls on connections already open go
    on, new ones wait in the kernel's queue, nothing spins a core, the operator is told, and
    everything is back once connections close.

    gRPC's own listener retries accept once a second (its plain "File descriptor limit
    reached" line). The Prometheus endpoint did not: a scrape waiting while no descriptor was
    free made its accept loop spin a whole core (3.99 s of CPU in 4 s), without a word."""
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
        time.sleep(0.5)
        before = _cpu_s(svc.proc.pid)
        time.sleep(2.0)
        spent = _cpu_s(svc.proc.pid) - before
        assert spent < 0.5, f"{spent:.2f} s of CPU in 2 s while out of descriptors"
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
        scrape.settimeout(10)
        answer = b""
        while chunk := scrape.recv(65536):
            answer += chunk
        assert answer.startswith(b"HTTP/1.0 200") and b"process_open_fds" in answer
        assert _health(svc.target) == health_pb2.HealthCheckResponse.SERVING
        available = [line for line in svc.lines(grpc_core=True) if line["event"] == "open_files_available"]
        assert len(available) == 1 and available[0]["failed_accepts"] >= 1
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
